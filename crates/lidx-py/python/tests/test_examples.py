"""The docs' notebook runs end to end."""

import os
import runpy

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def test_the_notebook_runs_and_draws_its_plot(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env = runpy.run_path(os.path.join(EXAMPLES, "notebook.py"), run_name="__main__")
    assert env["work"].startswith(str(tmp_path))
    with open(env["plot"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert env["through_index"].output_tuples == len(env["queries"])
    assert {r["kind"] for r in env["rows"]} == {"alex", "lipp", "btree"}
