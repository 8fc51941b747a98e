"""The library where users call it: `import cudal2`, one-line input errors, `linear`, `patch`/`unpatch`
(CPU: the GEMM itself is stood in for where a GPU would run it)."""

import pytest
import torch

import cudal2
from cudal2.library import Library, LibraryError
from cudal2.library.arrays import InputError, _problem


def test_import_cudal2_exposes_the_library():
    assert callable(cudal2.library.load) and callable(cudal2.linear) and callable(cudal2.patch)


def test_load_without_a_gpu_is_one_clear_line(monkeypatch):
    monkeypatch.setattr("cudal2.harness.device.gpu_present", lambda: "no NVIDIA GPU found (test)")
    with pytest.raises(LibraryError, match="needs an NVIDIA GPU"):
        cudal2.library.load()


def test_host_tensors_are_refused_not_computed_on_the_cpu(tmp_path):
    A = torch.ones(64, 64, dtype=torch.float16)
    with pytest.raises(InputError, match="host memory"):
        Library(tmp_path).matmul(A, A)


@pytest.mark.parametrize("args,needle", [((True, "float32", 2, True), "fp16"), ((True, "float16", 3, True), "linear"),
                                         ((True, "float16", 2, False), "contiguous")])
def test_each_wrong_input_names_its_fix(args, needle):
    on_gpu, dtype, ndim, contiguous = args
    assert needle in _problem("A", on_gpu, dtype, "float16", ndim, contiguous)


@pytest.fixture
def cpu_gemm(monkeypatch):
    """The library's GEMM, computed on the CPU in fp32 and rounded once, behind the real torch op."""
    import cudal2.library.torch_op as op
    monkeypatch.setattr(op, "matmul", lambda A, B: (A.float() @ B.float().T).half())


def test_linear_takes_leading_dimensions_and_bias(cpu_gemm):
    from cudal2.library.layers import python_linear   # the path without the compiled dispatcher
    x = torch.randn(2, 3, 5, 16).half()
    W, b = torch.randn(8, 16).half(), torch.randn(8).half()
    y = python_linear(None, x, W, b)
    want = torch.nn.functional.linear(x.float(), W.float(), b.float())
    assert y.shape == (2, 3, 5, 8) and torch.allclose(y.float(), want, atol=2e-2, rtol=1e-2)


def test_linear_refuses_host_tensors_in_one_line():
    with pytest.raises(InputError, match="host memory"):
        cudal2.linear(torch.randn(4, 16).half(), torch.randn(8, 16).half())


def test_linear_refuses_mismatched_weights():
    with pytest.raises(InputError, match="want x"):
        cudal2.linear(torch.randn(4, 16).half(), torch.randn(8, 12).half())


def tiny():
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8),
                               torch.nn.Linear(8, 8).float()).half().requires_grad_(False)


def test_patch_routes_fp16_linear_layers_and_unpatch_restores_them():
    m = tiny()
    m[3].float()
    assert cudal2.patch(m) == 2  # the two fp16 layers; the fp32 one is left alone
    assert cudal2.patch(m) == 0  # idempotent
    assert cudal2.unpatch(m) == 2 and "forward" not in m[0].__dict__


def test_a_patched_layer_keeps_its_own_forward_for_host_inputs():
    m = tiny()
    m[3].half()
    x = torch.randn(4, 16).half()
    before = m(x)
    cudal2.patch(m)
    assert torch.equal(m(x), before)
