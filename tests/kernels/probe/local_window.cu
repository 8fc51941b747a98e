// Raw local addressing (tests/test_gpu_scrub.py, eval/local_window_probe.py): a kernel may address
// any word of its local window with an integer, not only its own frame.
// frame_addr: the local address of a 4 KiB frame (out[0]); write_raw / read_raw: markers at the
// raw local addresses [lo, hi) of every thread, and how many of them a later launch finds.
extern "C" __global__ void frame_addr(unsigned long long* out) {
    volatile unsigned f[1024];
    f[threadIdx.x % 1024] = threadIdx.x;
    unsigned long long a;
    asm volatile("cvta.to.local.u64 %0, %1;" : "=l"(a) : "l"((unsigned long long)(&f[0])));
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = a;
    if (f[(threadIdx.x + 1) % 1024] == 0xFFFFFFFFu) out[1] = 1;
}
extern "C" __global__ void write_raw(unsigned lo, unsigned hi, unsigned key) {
    for (unsigned a = lo; a < hi; a += 4) {
        unsigned v = key ^ a;
        asm volatile("st.local.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
    }
}
extern "C" __global__ void read_raw(unsigned lo, unsigned hi, unsigned key, unsigned long long* found) {
    unsigned n = 0;
    for (unsigned a = lo; a < hi; a += 4) {
        unsigned v;
        asm volatile("ld.local.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
        n += (v == (key ^ a));
    }
    if (n) atomicAdd(found, (unsigned long long)n);
}
