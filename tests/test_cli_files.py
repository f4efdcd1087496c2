"""The ``dpspectral`` command on real files: delimiters, public per-column scaling, transform reusing
model.json, the privacy ledger shared by runs (``--ledger``/``--budget``) and ``--seed secure``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from dp_accounting import dp_event as dpe

from dpspectral.cli import main
from dpspectral.privacy._accounting import RANDOM_STATE_NOTE, Accountant, EpsilonDeltaDpEvent

#: Public per-column declarations of the test file (chosen without looking at its values).
SCALING = {"age": {"lower": 0, "upper": 100}, "income": {"center": 100, "scale": 40},
           "score": {"lower": -15, "upper": 15}}
FIT = ["--label-column", "label", "--drop-column", "id", "--k", "2", "--delta", "1e-6", "--row-norm", "1.5"]


def _write(path: Path, X: np.ndarray, sep: str, *, label: bool = True, garbage: bool = False) -> Path:
    """A delimited file with an id column, three numeric columns and (optionally) a label."""
    with path.open("w") as f:
        f.write(sep.join(["id", "age", "income", "score", *(["label"] if label else [])]) + "\n")
        for i, row in enumerate(X):
            cells = [str(i), *(repr(float(v)) for v in row), *([str(i % 2)] if label else [])]
            if garbage:  # every record after the header fails to parse
                cells[1] = "privcell_7f3a"
            f.write(sep.join(cells) + "\n")
    return path


@pytest.fixture
def people() -> np.ndarray:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)) * [15.0, 30.0, 6.0] + [45.0, 110.0, 0.0]
    X[0] = [150.0, 110.0, -40.0]  # outside the declared bounds: clipped by the scaling
    return X


def _scaled(X: np.ndarray) -> np.ndarray:
    out = np.empty_like(X)
    out[:, 0] = (2 * np.clip(X[:, 0], 0, 100) - 100) / 100
    out[:, 1] = (X[:, 1] - 100) / 40
    out[:, 2] = np.clip(X[:, 2], -15, 15) / 15
    return out


@pytest.mark.parametrize(("sep", "option"), [(";", ";"), ("\t", "\\t")])
def test_delimited_file_with_schema_bounds_then_transform_reuses_the_model(people, tmp_path, capsys, sep,
                                                                           option):
    data = _write(tmp_path / "people.csv", people, sep)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"scaling": SCALING}))
    out = tmp_path / "model"
    assert main(["fit", str(data), "--delimiter", option, "--schema", str(schema), *FIT, "--epsilon", "1",
                 "--seed", "0", "--out", str(out)]) == 0
    model_text = (out / "model.json").read_text()
    model = json.loads(model_text)
    assert str(tmp_path) not in model_text  # no absolute path (nor any folder) is saved
    assert model["data"]["source"] == "people.csv"
    assert model["data"]["delimiter"] == sep
    assert model["data"]["label_column"] == "label" and model["data"]["drop_columns"] == ["id"]
    assert model["data"]["scaling"] == {k: {n: float(v) for n, v in r.items()} for k, r in SCALING.items()}
    assert model["feature_names"] == ["age", "income", "score"]
    assert model["clip"]["norm"] == 1.5 and model["clip"]["after_centering"] is False
    C = np.load(out / "components.npy")
    capsys.readouterr()

    # transform with nothing but the model: delimiter, label, dropped column and scaling come from it
    z = tmp_path / "z.npy"
    assert main(["transform", str(data), "--model", str(out), "--out", str(z)]) == 0
    assert "rows clipped at 1.5" in capsys.readouterr().out
    S = _scaled(people)
    S *= np.minimum(1.0, 1.5 / np.linalg.norm(S, axis=1))[:, None]  # clipped as the fit clipped
    assert np.allclose(np.load(z), S @ C.T)

    # a comma-separated copy without the label: --delimiter and --no-label-column override the model
    plain = _write(tmp_path / "new.csv", people, ",", label=False)
    z2 = tmp_path / "z2.npy"
    assert main(["transform", str(plain), "--model", str(out), "--out", str(z2), "--delimiter", ",",
                 "--no-label-column"]) == 0
    assert np.allclose(np.load(z2), S @ C.T)
    # --no-clip projects the scaled rows as they are
    assert main(["transform", str(data), "--model", str(out), "--out", str(z2), "--no-clip"]) == 0
    assert np.allclose(np.load(z2), _scaled(people) @ C.T)


@pytest.mark.parametrize(("schema", "extra", "needle"), [
    ({"scaling": {"age": {"lower": 5, "upper": 1}}}, [], '"scaling" must map'),
    ({"scaling": {"age": {"center": 0, "scale": 0}}}, [], '"scaling" must map'),
    ({"scaling": {"age": {"lower": 0}}}, [], '"scaling" must map'),
    ({"scaling": {"height": {"lower": 0, "upper": 1}}}, ["--delimiter", ";"], "names the column 'height'"),
    ({"delimiter": ","}, [], None),  # wrong delimiter for this file: the label column is not found
    ({"delimiter": ","}, ["--delimiter", ";"], "contradicts"),
    ({"delimiter": "ab"}, [], '"delimiter"'),
])
def test_bad_declarations_are_refused_quoting_no_data(people, tmp_path, capsys, schema, extra, needle):
    data = _write(tmp_path / "people.csv", people, ";")
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    out = tmp_path / "model"
    assert main(["fit", str(data), "--schema", str(path), *extra, *FIT, "--epsilon", "1",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle is None or needle in err
    assert "Traceback" not in err and repr(float(people[1, 0])) not in err
    assert not out.exists()


@pytest.mark.parametrize("value", ["x", "7", ".", "-", '"', ";;"])
def test_bad_delimiter_is_refused(people, tmp_path, capsys, value):
    data = _write(tmp_path / "people.csv", people, ";")
    assert main(["fit", str(data), "--delimiter", value, *FIT, "--epsilon", "1",
                 "--out", str(tmp_path / "m")]) == 2
    assert "--delimiter" in capsys.readouterr().err


def _ledger_fit(data: Path, ledger: Path, out: Path, epsilon: str, *extra: str) -> int:
    return main(["fit", str(data), "--delimiter", ";", *FIT, "--epsilon", epsilon, "--ledger", str(ledger),
                 "--out", str(out), *extra])


def test_ledger_across_runs_refuses_before_reading(people, tmp_path, capsys):
    data = _write(tmp_path / "people.csv", people, ";")
    ledger = tmp_path / "budget.json"
    assert _ledger_fit(data, ledger, tmp_path / "m1", "1", "--budget", "1.5,1e-5", "--ledger-label",
                       "first look") == 0
    assert "ledger" in capsys.readouterr().out
    state = json.loads(ledger.read_text())
    assert state["format"] == "dpspectral-privacy-ledger" and state["format_version"] == 1
    (run,) = state["runs"]
    assert run["label"] == "first look" and run["requested_epsilon"] == 1.0 and run["delta"] == 1e-6
    assert run["status"] == "released" and run["time"].endswith("+00:00")
    assert run["epsilon"] == pytest.approx(1.0)
    assert str(tmp_path) not in ledger.read_text()
    before = ledger.read_bytes()

    # The second run could exceed the budget: refused before DATA is read. The file would fail to
    # parse after its header, so an error about a cell would show that it was read.
    unread = _write(tmp_path / "unread.csv", people, ";", garbage=True)
    assert _ledger_fit(unread, ledger, tmp_path / "m2", "1") == 2
    err = capsys.readouterr().err
    assert "refused before reading DATA" in err and "Nothing was read or charged" in err
    assert "privcell" not in err and "not a number" not in err
    assert ledger.read_bytes() == before  # nothing charged
    assert not (tmp_path / "m2").exists()

    # A data error after the check charges nothing either (the reservation is withdrawn) ...
    assert _ledger_fit(unread, ledger, tmp_path / "m2", "0.1") == 2
    assert "privcell" not in capsys.readouterr().err
    assert json.loads(ledger.read_text())["runs"] == state["runs"]
    # ... and a run that fits is charged: the accountant composes the two runs' events.
    assert _ledger_fit(data, ledger, tmp_path / "m3", "0.1") == 0
    after = json.loads(ledger.read_text())
    assert [r["status"] for r in after["runs"]] == ["released", "released"]
    assert after["spent"]["epsilon"] > state["spent"]["epsilon"]
    assert after["spent"]["epsilon"] < state["spent"]["epsilon"] + 0.1 + 1e-9  # tighter than adding up
    acc = Accountant.from_dict(after["accountant"])
    assert acc.epsilon_spent() == pytest.approx(after["spent"]["epsilon"])

    # the budget is fixed at creation; another relation does not compose with the runs
    assert _ledger_fit(data, ledger, tmp_path / "m4", "0.1", "--budget", "5,1e-5") == 2
    assert "does not change" in capsys.readouterr().err
    assert _ledger_fit(data, ledger, tmp_path / "m4", "0.1", "--relation", "add_remove") == 2
    assert "relations do not compose" in capsys.readouterr().err
    assert json.loads(ledger.read_text())["runs"] == after["runs"]


def test_a_run_that_fails_after_its_charge_stays_charged(people, tmp_path, capsys, monkeypatch):
    from dpspectral._estimators import DPPCA

    data = _write(tmp_path / "people.csv", people, ";")
    ledger = tmp_path / "budget.json"

    def broken_store(self, result, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(DPPCA, "_store", broken_store)
    assert _ledger_fit(data, ledger, tmp_path / "m", "1", "--budget", "3,1e-5") == 2
    (run,) = json.loads(ledger.read_text())["runs"]
    assert run["status"] == "failed: OSError" and run["entries"][1] > run["entries"][0]


@pytest.mark.parametrize("content", [
    "not json at all",
    '{"format": "dpspectral-privacy-ledger", "format_version": 99, "runs": []}',
    '{"format": "something-else"}',
    None,  # a real ledger, truncated
    "tampered",  # a real ledger whose runs no longer match its entries
])
def test_corrupt_or_foreign_ledger_is_refused_never_reset(people, tmp_path, capsys, content):
    data = _write(tmp_path / "people.csv", people, ";")
    ledger = tmp_path / "budget.json"
    if content in (None, "tampered"):
        assert _ledger_fit(data, ledger, tmp_path / "m0", "0.5", "--budget", "3,1e-5") == 0
        if content is None:
            ledger.write_text(ledger.read_text()[:200])
        else:
            state = json.loads(ledger.read_text())
            state["runs"] = []
            ledger.write_text(json.dumps(state))
    else:
        ledger.write_text(content)
    before = ledger.read_bytes()
    capsys.readouterr()
    assert _ledger_fit(data, ledger, tmp_path / "m", "0.5", "--budget", "3,1e-5") == 2
    err = capsys.readouterr().err
    assert "left unchanged" in err or "not a dpspectral privacy ledger" in err
    if content and "99" in content:
        assert "format version 99" in err
    assert ledger.read_bytes() == before
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (["--budget", "3,1e-5"], "--ledger FILE only"),
    (["--ledger", "{tmp}/missing.json"], "give --budget"),
    (["--ledger", "{tmp}/l.json", "--budget", "3,1e-5", "--calibration", "paper"], "calibration tight"),
    (["--ledger", "{tmp}/l.json", "--budget", "-1"], "--budget"),
    (["--ledger", "{tmp}/l.json", "--budget", "1,2"], "--budget"),
    (["--ledger", "{tmp}/l.json", "--budget", "1"], "delta 1e-06 is above the ledger's delta 0"),
    (["--ledger", "{tmp}/nofolder/l.json", "--budget", "1,1e-5"], "folder does not exist"),
])
def test_bad_ledger_options_are_refused_before_any_charge(people, tmp_path, capsys, args, needle):
    data = _write(tmp_path / "people.csv", people, ";", garbage=True)  # never read
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(["fit", str(data), "--delimiter", ";", *FIT, "--epsilon", "1", "--out",
                 str(tmp_path / "m"), *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and "privcell" not in err
    assert not (tmp_path / "l.json").exists()


def test_seed_secure_and_the_seed_note(people, tmp_path, capsys):
    data = _write(tmp_path / "people.csv", people, ";")
    assert main(["fit", str(data), "--delimiter", ";", *FIT, "--epsilon", "1", "--seed", "secure",
                 "--out", str(tmp_path / "s")]) == 0
    printed = capsys.readouterr().out
    assert "secure source" in printed and RANDOM_STATE_NOTE not in printed
    assert json.loads((tmp_path / "s" / "privacy.json").read_text())["noise_source"] == "secure"
    assert json.loads((tmp_path / "s" / "model.json").read_text())["params"]["seed"] == "secure"

    assert main(["fit", str(data), "--delimiter", ";", *FIT, "--epsilon", "1",
                 "--out", str(tmp_path / "n")]) == 0
    assert RANDOM_STATE_NOTE not in capsys.readouterr().out  # no seed given: no note about one
    assert main(["fit", str(data), "--delimiter", ";", *FIT, "--epsilon", "1", "--seed", "4",
                 "--out", str(tmp_path / "g")]) == 0
    assert RANDOM_STATE_NOTE in capsys.readouterr().out


def test_accountant_round_trips_through_json():
    acc = Accountant(3.0, 1e-5)
    acc.spend(dpe.ComposedDpEvent([dpe.GaussianDpEvent(4.2), dpe.SelfComposedDpEvent(
        dpe.PoissonSampledDpEvent(0.1, dpe.GaussianDpEvent(2.0)), 3)]), "replace_one", label="a")
    acc.spend(EpsilonDeltaDpEvent(0.1, 1e-7), "replace_one", label="b")
    data = json.loads(json.dumps(acc.to_dict()))
    back = Accountant.from_dict(data)
    assert back.to_dict() == acc.to_dict()
    assert back.epsilon_spent() == pytest.approx(acc.epsilon_spent())
    data["entries"][0]["event"]["type"] = "MadeUpDpEvent"
    with pytest.raises(ValueError, match="unknown type"):
        Accountant.from_dict(data)
