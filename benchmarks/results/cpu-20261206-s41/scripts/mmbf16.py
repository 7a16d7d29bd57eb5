import torch, time
def t(f, n=5):
    f(); best=1e9
    for _ in range(n):
        s=time.perf_counter(); f(); best=min(best, time.perf_counter()-s)
    return best
for (m,k,n,tr) in [(16,160,384,False),(384,1024,160,True),(1024,384,32,False),(256,1536,3072,False),(3072,16384,1536,True)]:
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        a = torch.randn(k,m,dtype=dt).t() if tr else torch.randn(m,k,dtype=dt)
        b = torch.randn(k,n,dtype=dt)
        s = t(lambda: a@b)
        print(f"{m}x{k}x{n} tr={tr} {str(dt):15s} {s*1e3:8.3f} ms {2*m*k*n/s/1e9:8.1f} GFLOP/s")
