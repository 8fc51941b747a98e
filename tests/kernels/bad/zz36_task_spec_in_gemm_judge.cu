// CLASS: escaping the penalty: a GEMM candidate whose launch spec names a general task
// ("task": "gemm-bias") and passes that task's buffer names (a, b, c) with the GEMM's sizes M, N, K.
// The spec validates (it speaks gemm-bias's vocabulary), the cubin passes every build rule, and
// the loader's parameter check passes (three pointers, three ints), so the GEMM judge loads it.
// At the first call `module.Module.launch` binds the arguments by the GEMM's names only
// ({"A", "B", "C"}, {"M", "N", "K"}): "a" is neither, so it falls to the tensor-map branch and
// unpacks None -> TypeError. That is no `Failed`: the worker answers with an error, the evaluator
// records a "harness error" with `checks["harness_traceback"]`, and `rl.reward.from_result` reads
// that as an infrastructure fault: reward None (TRL: unscorable, advantage 0) instead of the
// floor. The kernel here writes nothing at all; any kernel, however wrong, escapes its penalty
// this way, and the result is never stored (re-judged on every resume).
// Expected stage: "load" (a GEMM candidate whose spec names a task is refused), with no
// harness_traceback.
/* cudal2-launch
{"task": "gemm-bias",
 "kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
              "args": ["a", "b", "c", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>

extern "C" __global__ void k(const __half* a, const __half* b, __half* c, int M, int N, int K) {
    // Nothing: C keeps the judge's random values. Never reached: the harness raises before launching.
}
