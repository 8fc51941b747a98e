"""CLI bad input, review 43: each ends with one line on stderr and exit code 2, no traceback, and
leaves nothing behind (see each test)."""

from typer.testing import CliRunner

from cudal2 import cli

from .conftest import KERNELS

runner = CliRunner()
V2 = str(KERNELS / "good" / "naive_v2.cu")


def run(*args):
    return runner.invoke(cli.app, [str(a) for a in args])


def assert_clean_error(res, needle):
    assert res.exit_code == 2, res.output
    assert needle in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output


def test_a_shapes_file_that_is_not_utf8(tmp_path):
    (tmp_path / "s.json").write_bytes(b"\xff\xfe")
    assert_clean_error(run("generate", "--shapes", tmp_path / "s.json", "--build-only"), "cannot read shapes file")


def test_a_shapes_path_that_is_a_folder(tmp_path):
    assert_clean_error(run("generate", "--shapes", tmp_path, "--build-only"), "cannot read shapes file")


def test_a_config_that_is_not_utf8(tmp_path):
    (tmp_path / "c.toml").write_bytes(b"\xff")
    assert_clean_error(run("eval", V2, "--mnk", "64,64,64", "-c", tmp_path / "c.toml"), "cannot read config file")


def test_a_config_path_that_is_a_folder(tmp_path):
    assert_clean_error(run("eval", V2, "--mnk", "64,64,64", "-c", tmp_path), "cannot read config file")


def test_a_model_config_that_is_not_utf8(tmp_path):
    (tmp_path / "m.json").write_bytes(b"\xff")
    assert_clean_error(run("generate", "--model", tmp_path / "m.json", "--m", "1", "--build-only"),
                       "not a readable JSON config")


def test_a_nan_config_value(tmp_path):
    (tmp_path / "c.toml").write_text("[search]\nbudget_minutes = nan\n")
    assert_clean_error(run("generate", "--mnk", "64,64,64", "--build-only", "-c", tmp_path / "c.toml"), "nan")


def test_a_nan_budget_on_the_command_line():
    assert_clean_error(run("generate", "--mnk", "64,64,64", "--build-only", "--budget-minutes", "nan"),
                       "--budget-minutes")


def test_a_huge_mnk():
    assert_clean_error(run("generate", "--mnk", "99999999999999999999999,64,64", "--build-only"), "at most")


def test_a_huge_shape_in_a_shapes_file(tmp_path):
    (tmp_path / "s.json").write_text("[[8589934592, 64, 64]]")
    assert_clean_error(run("generate", "--shapes", tmp_path / "s.json", "--build-only"), "at most")


def test_library_build_with_a_mistyped_root_creates_nothing(tmp_path):
    root = tmp_path / "nope"
    assert_clean_error(run("library", "build", "--root", root, "--arch", "sm90", "--no-dispatcher"),
                       "no library folder")
    assert not root.exists()


def test_library_ls_of_a_mistyped_root_is_an_error_not_an_empty_table(tmp_path):
    assert_clean_error(run("library", "ls", "--root", tmp_path / "nope", "--arch", "sm90"), "no library folder")
    assert_clean_error(run("library", "ls", "--arch", "sm9O"), "no library folder")
