"""lidx.experiment: a study run by the command line, its rows read back."""

import os
import sys
import types

import pytest

import lidx

SMALL_UPDATABLE = dict(
    n="20K", ops="2K", local=[4, 16], global_=[1], sets=["lognormal"], scan_lens=[10], kinds=["alex", "btree"], repeat=1
)


def test_a_study_returns_its_rows_summary_and_plots(tmp_path):
    r = lidx.experiment("updatable", out_dir=tmp_path / "o", **SMALL_UPDATABLE)
    assert r.out_dir == str(tmp_path / "o") and list(r.csvs) == ["updatable.csv"]
    assert r.rows is r.csvs["updatable.csv"] and len(r.rows) > 10
    assert {row["kind"] for row in r.rows} == {"alex", "btree"}
    assert all(isinstance(row["keys"], int) and isinstance(row["ops_per_s"], (int, float)) for row in r.rows)
    assert r.summary.startswith("# Paper 3")
    assert r.plots and all(open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n" for p in r.plots)


def test_frame_hands_the_rows_to_pandas(tmp_path, monkeypatch):
    fake = types.ModuleType("pandas")
    fake.DataFrame = lambda rows: ("frame", len(rows))
    monkeypatch.setitem(sys.modules, "pandas", fake)
    r = lidx.experiment("updatable", out_dir=tmp_path / "o", **SMALL_UPDATABLE)
    assert r.frame() == ("frame", len(r.rows))


def test_a_failed_study_raises_the_command_lines_message(tmp_path):
    with pytest.raises(lidx.LidxError, match="0 is not in 1..=100"):
        lidx.experiment("updatable", out_dir=tmp_path / "o", n="20K", repeat=0)
    with pytest.raises(lidx.LidxError, match="unrecognized subcommand|nonsense"):
        lidx.experiment("nonsense", out_dir=tmp_path / "p")
    with pytest.raises(ValueError, match="not an experiment name"):
        lidx.experiment("--help")


def test_without_the_command_line_it_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.delenv("LIDX_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(lidx.LidxError, match="reinstall the package"):
        lidx.experiment("updatable", out_dir=tmp_path / "o")


def lidx_script():
    return os.path.join(os.path.dirname(sys.executable), "lidx")


def test_the_package_installs_the_command_line(tmp_path):
    """`pip install` puts `lidx` beside the interpreter: the command line itself, run inside
    Python, whose files are those of the library's."""
    import subprocess

    done = subprocess.run([lidx_script(), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("lidx "), done
    out = tmp_path / "k.keys"
    done = subprocess.run([lidx_script(), "gen", "--dist", "normal", "--n", "5000", "--seed", "3", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (lidx.read_keys(out) == lidx.generate("normal", 5000, seed=3)).all()
    done = subprocess.run([lidx_script(), "gen", "--dist", "zipf", "--n", "5", "--out", str(tmp_path / "x.keys")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("lidx: error: ") and not (tmp_path / "x.keys").exists()
    done = subprocess.run([lidx_script(), "table", "info", str(tmp_path / "missing.tbl")], capture_output=True, text=True)
    assert done.returncode == 1 and "missing.tbl" in done.stderr
