"""Privacy of the ``dpspectral fit`` / ``transform`` boundary.

Two structural tests over the command line:

* a seeded property test: random CSV files (numeric columns, declared categorical columns holding
  values outside their declaration, text labels, an index column, stray cells, with and without a
  header) go through ``fit`` and ``transform``; no private cell value may appear in any output file,
  on stdout or on stderr, unless it was declared public (a header name, a declared category);
* a neighbour test: two files that differ in one record (replaced, or removed under add/remove),
  fitted with the same seed, give identical outputs except the released numeric arrays.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dpspectral.cli import main

#: Released numbers in model.json (noisy or computed from noisy releases only).
RELEASED_MODEL_FIELDS = ("explained_variance", "explained_variance_ratio", "mean")
FAST_METHODS = (("analyze_gauss", "replace_one"), ("analyze_gauss", "add_remove"),
                ("mod_sulq", "replace_one"), ("noisy_power", "add_remove"), ("wishart", "replace_one"))


def _token(rng: np.random.Generator, prefix: str) -> str:
    return f"{prefix}{rng.integers(16**8):08x}"


def _cell(rng: np.random.Generator) -> str:
    # Nine decimals: a private number's text is distinctive, and its value cannot be a round output.
    return f"{rng.uniform(-0.3, 0.3):.9f}"


def _random_case(rng: np.random.Generator, folder: Path) -> dict:
    """A random CSV file, its public declarations and its private values."""
    n = int(rng.integers(12, 40))
    n_num, n_cat = int(rng.integers(1, 4)), int(rng.integers(0, 3))
    header = bool(rng.integers(2))
    # Half the cases give no --header/--no-header (the default: a header is expected). A headerless file
    # read that way, with its columns referred to by the names the user wrongly believes it has, must be
    # refused without showing the first record (which the default would otherwise take as names).
    implicit = bool(rng.integers(2))
    kinds = ["num"] * n_num + ["cat"] * n_cat + (["label"] if rng.integers(2) else [])
    kinds = [kinds[i] for i in rng.permutation(len(kinds))]
    if rng.integers(2):
        kinds.insert(0, "index")
    names = [f"col_{j}_{kind}" for j, kind in enumerate(kinds)]
    ref = (lambda j: names[j]) if header or implicit else (lambda j: str(j))
    declared: dict[str, list[str]] = {}
    private_text: set[str] = set()
    private_numbers: set[str] = set()
    columns = []
    for j, kind in enumerate(kinds):
        if kind == "num":
            col = [_cell(rng) for _ in range(n)]
            private_numbers.update(col)
        elif kind == "cat":
            cats = [_token(rng, "pubcat_") for _ in range(int(rng.integers(1, 4)))]
            declared[ref(j)] = cats
            outside = [_token(rng, "privcat_") for _ in range(2)]  # values nobody declared
            col = [cats[i % len(cats)] if rng.random() < 0.7 else outside[i % 2] for i in range(n)]
            private_text.update(v for v in col if v not in cats)
        elif kind == "label":
            col = [_token(rng, "privlabel_") for _ in range(n)]
            private_text.update(col)
        else:
            col = [str(i) for i in range(n)]  # an index column, dropped
        columns.append(col)
    stray = None
    if rng.random() < 0.3:  # a stray cell in a numeric column: the fit must refuse, quoting nothing
        j = int(rng.choice([j for j, k in enumerate(kinds) if k == "num"]))
        stray = _token(rng, "privstray_")
        columns[j][int(rng.integers(1, n))] = stray  # not the first record: see the caveat in the docs
        private_text.add(stray)
    path = folder / "data.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        if header:
            w.writerow(names)
        w.writerows(zip(*columns, strict=True))
    args = [] if implicit else ["--header" if header else "--no-header"]
    if "label" in kinds:
        args += ["--label-column", ref(kinds.index("label"))]
    if "index" in kinds:
        args += ["--drop-column", ref(0)]
    if declared and rng.integers(2):
        schema = folder / "schema.json"
        schema.write_text(json.dumps({"categories": declared}))
        args += ["--schema", str(schema)]
    else:
        for key, cats in declared.items():
            args += ["--categories", f"{key}={','.join(cats)}"]
    d = n_num + sum(len(c) for c in declared.values())
    return {"path": path, "args": args, "d": d, "refuse": stray is not None or (implicit and not header),
            "text": private_text, "numbers": private_numbers}


def _outputs(paths: list[Path], captured) -> tuple[str, np.ndarray]:
    """All text written (files, stdout, stderr) and all numbers in the .npy files."""
    texts = [captured.out, captured.err]
    numbers = [np.empty(0)]
    for p in paths:
        for f in sorted(p.rglob("*")) if p.is_dir() else ([p] if p.exists() else []):
            if f.suffix == ".npy":
                numbers.append(np.load(f).ravel())
            else:
                texts.append(f.read_text())
    return "\n".join(texts), np.concatenate(numbers)


def test_no_private_cell_value_reaches_any_output(tmp_path, capsys):
    # 30 seeded random files; deterministic (no false positives: a private token is a random 8-hex-digit
    # string or a 9-decimal number, which no output contains by chance).
    rng = np.random.default_rng(20261126)
    refused = fitted = 0
    for case in range(30):
        folder = tmp_path / f"case{case}"
        folder.mkdir()
        c = _random_case(rng, folder)
        method, relation = FAST_METHODS[case % len(FAST_METHODS)]
        out, zcsv, znpy = folder / "model", folder / "z.csv", folder / "z.npy"
        k = int(rng.integers(1, c["d"] + 1))
        fit = ["fit", str(c["path"]), *c["args"], "--k", str(k), "--epsilon", "1", "--delta", "1e-5",
               "--row-norm", "1", "--method", method, "--relation", relation, "--seed", str(case),
               "--out", str(out)]
        status = main(fit)
        if c["refuse"]:
            assert status == 2, case
            refused += 1
        else:
            assert status == 0, (case, capsys.readouterr().err)
            fitted += 1
            model = json.loads((out / "model.json").read_text())
            assert model["n_features"] == c["d"]  # the width comes from the declarations only
            data_args = [a for a in c["args"] if not a.startswith("--categories") and "=" not in a]
            for z in (zcsv, znpy):  # transform takes the declared categories from the model
                assert main(["transform", str(c["path"]), *data_args, "--model", str(out),
                             "--out", str(z)]) == 0, (case, capsys.readouterr().err)
        captured = capsys.readouterr()
        text, numbers = _outputs([out], captured)
        for secret in c["text"]:
            assert secret not in text, (case, secret)
        for cell in c["numbers"]:
            assert cell not in text, (case, cell)
        assert not np.isin(numbers, [float(v) for v in c["numbers"]]).any(), case
        # The projections are the user's own data mapped by the released components (not a release:
        # with k = d = 1 they are the column itself); they may hold no text from the file.
        ztext, _ = _outputs([zcsv], captured)
        assert not any(secret in ztext for secret in c["text"]), case
    assert refused >= 3 and fitted >= 15  # both paths were exercised


def _neighbour_files(tmp_path: Path, change: str) -> tuple[str, str]:
    """The text of a CSV file and of a neighbour: one record replaced, or removed."""
    rng = np.random.default_rng(5)
    cats = ["tcp", "udp", "icmp"]
    rows = []
    for i in range(80):
        x = rng.normal(size=3) * [0.3, 0.2, 0.05]
        rows.append([i, *[f"{v:.6f}" for v in x], cats[i % 3] if i % 7 else "gre", f"user{i}"])
    header = ["", "a", "b", "c", "proto", "who"]

    def text(rs: list[list[object]]) -> str:
        lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rs]
        return "\n".join(lines) + "\n"

    other = [list(r) for r in rows]
    if change == "replace":
        other[41] = [41, "0.999000", "-0.700000", "0.100000", "secretproto", "intruder"]
    else:
        del other[41]
    return text(rows), text(other)


@pytest.mark.parametrize(("method", "relation", "extra", "plain"), [
    ("analyze_gauss", "replace_one", [], False),
    ("analyze_gauss", "add_remove", ["--centering", "private"], False),
    ("mod_sulq", "replace_one", [], False),
    ("noisy_power", "add_remove", [], False),
    ("wishart", "replace_one", [], False),
    ("dp_spca", "replace_one", [], False),
    # Plain numeric files (no declarations), which the old command line also read: it printed the
    # row count and the fit time.
    ("analyze_gauss", "replace_one", [], True),
    ("analyze_gauss", "add_remove", [], True),
])
def test_neighbouring_files_give_identical_outputs_but_the_releases(tmp_path, capsys, method, relation,
                                                                    extra, plain):
    # Same seed, files differing in one record (replaced; removed under add_remove): every output that
    # is not a released numeric array must be identical, byte for byte -- stdout, stderr, privacy.json,
    # model.json without its released fields, the components' shape. Deterministic.
    change = "remove" if relation == "add_remove" else "replace"
    texts = _neighbour_files(tmp_path, change)
    if plain:  # keep the numeric columns a, b, c only
        texts = tuple("\n".join(",".join(ln.split(",")[1:4]) for ln in t.splitlines()) + "\n" for t in texts)
    data, out = tmp_path / "data.csv", tmp_path / "model"
    seen = []
    for text in texts:
        data.write_text(text)
        if out.exists():
            shutil.rmtree(out)
        declare = [] if plain else ["--label-column", "who", "--drop-column", "", "--categories",
                                    "proto=tcp,udp,icmp"]
        args = ["fit", str(data), *declare, "--k", "2", "--epsilon", "1", "--delta", "1e-5",
                "--row-norm", "1", "--method", method, "--relation", relation, "--seed", "11", *extra,
                "--out", str(out)]
        status = main(args)
        captured = capsys.readouterr()
        assert status == 0, captured.err
        model = json.loads((out / "model.json").read_text())
        released = {f: model.pop(f) for f in RELEASED_MODEL_FIELDS}
        if relation == "add_remove":
            released["n_samples"] = model.pop("n_samples")  # a released noisy count, or null
        stdout = [ln for ln in captured.out.splitlines() if "(released)" not in ln]
        seen.append({
            "stdout": stdout, "stderr": captured.err, "model": model,
            "privacy": (out / "privacy.json").read_text(),
            "shape": np.load(out / "components.npy").shape, "files": sorted(p.name for p in out.iterdir()),
        })
        # the variances where the method releases eigenvalues (the covariance methods), else null
        covariance = method in ("analyze_gauss", "mod_sulq", "wishart")
        assert (released["explained_variance"] is not None) == covariance
    assert seen[0] == seen[1]
