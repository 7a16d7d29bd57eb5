#!/usr/bin/env bash
# What a device call's results were measured on, for its record (`bash benchmarks/device_env.sh >
# $OUT/x-env.txt`): the time, the GPU, torch with its CUDA and cuDNN, the host's cores, and the
# tree (its commit, and what differs from it: the device's copy holds one commit and the session's
# changes uncommitted).
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
echo "cores: $(nproc); TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-}"
git log --oneline -1
git status --short | head -40
