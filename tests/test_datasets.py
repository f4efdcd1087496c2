"""Tests of dpspectral.datasets: loaders (real files and small temporary ones), preprocessing and
synthetic generators."""

from __future__ import annotations

import csv
import gzip
import hashlib
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral import datasets as ds
from dpspectral.privacy import _clipping as clipping

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="module")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"the public data sets folder {SHARED_DATA} is absent")
    return SHARED_DATA


def _gzip_copy(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


# ------------------------------------------------------------------------------------------------
# Real data sets (../shared/data)
# ------------------------------------------------------------------------------------------------


def test_a9a_train(shared_data: Path) -> None:
    X, y = ds.load_libsvm(shared_data / "a9a" / "a9a.gz")
    assert X.shape == (32561, 123)
    assert X.dtype == np.float64
    assert set(np.unique(y).tolist()) == {-1, 1}
    assert set(np.unique(X).tolist()) == {0.0, 1.0}  # README: every stored feature value is 1
    Xs, ys = ds.load_libsvm(str(shared_data / "a9a" / "a9a.gz"), dense=False)
    assert sp.issparse(Xs) and Xs.format == "csr"
    np.testing.assert_array_equal(Xs.toarray(), X)
    np.testing.assert_array_equal(ys, y)


def test_a9a_test_needs_n_features(shared_data: Path) -> None:
    narrow, _ = ds.load_libsvm(shared_data / "a9a" / "a9a.t.gz", dense=False)
    assert narrow.shape == (16281, 122)  # the pitfall the README warns about
    X, y = ds.load_libsvm(shared_data / "a9a" / "a9a.t.gz", n_features=123)
    assert X.shape == (16281, 123)
    assert set(np.unique(y).tolist()) == {-1, 1}


@pytest.fixture(scope="module")
def mnist_train(shared_data: Path) -> tuple[np.ndarray, np.ndarray]:
    folder = shared_data / "mnist"
    return ds.load_idx(folder / "train-images-idx3-ubyte.gz", folder / "train-labels-idx1-ubyte.gz")


def test_mnist_train(mnist_train: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = mnist_train
    assert X.shape == (60000, 784) and X.dtype == np.float64
    assert y.shape == (60000,)
    assert X.min() == 0 and X.max() == 255
    assert np.all(X == np.round(X))
    assert y[0] == 5
    np.testing.assert_array_equal(np.unique(y), np.arange(10))
    # The pixels in the order read reproduce the published MD5 of the uncompressed file.
    header = struct.pack(">IIII", 2051, 60000, 28, 28)
    digest = hashlib.md5(header + X.astype(np.uint8).tobytes()).hexdigest()
    assert digest == "6bbc9ace898e44ae57da46a324031adb"


def test_mnist_t10k_through_load_finds_labels(shared_data: Path) -> None:
    data = ds.load(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz")
    assert data.X.shape == (10000, 784)
    assert data.y is not None and data.y.shape == (10000,)
    assert set(np.unique(data.y).tolist()) == set(range(10))
    assert data.name == "t10k-images-idx3-ubyte"
    X, y = data  # unpacks as a pair
    assert X is data.X and y is data.y


def test_mnist_5k_csv(shared_data: Path, mnist_train: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = ds.load_csv(shared_data / "mnist-5k" / "mnist_5k.csv.gz", label_column=-1, header=False)
    assert X.shape == (5000, 784)
    assert y is not None and y.dtype.kind == "i"
    np.testing.assert_array_equal(np.bincount(y), np.full(10, 500))
    assert X.min() >= 0 and X.max() <= 255
    # It is a subset of the MNIST training set: a few rows appear there with the same label.
    Xt, yt = mnist_train
    index = {row.tobytes(): lab for row, lab in zip(Xt, yt, strict=True)}
    for i in (0, 1234, 4999):
        assert index.get(X[i].tobytes()) == y[i]


def test_rt_iot2022(shared_data: Path) -> None:
    path = shared_data / "rt-iot2022" / "RT_IOT2022.csv.gz"
    # The public categories of the two text columns (the data set's documentation); declared, they
    # are the only categories and the width is fixed by them.
    cats = {"proto": ["icmp", "tcp", "udp"],
            "service": ["-", "dhcp", "dns", "http", "irc", "mqtt", "ntp", "radius", "ssh", "ssl"]}
    data = ds.load(path, label_column="Attack_type", drop_columns=[""], categories=cats)
    X, y, names = data.X, data.y, data.feature_names
    assert X.shape[0] == 123117 and y is not None and y.shape == (123117,)
    assert len(np.unique(y)) == 12 and y.dtype.kind == "U"
    assert names is not None and len(names) == X.shape[1]
    assert "" not in names and "Attack_type" not in names
    proto = [j for j, n in enumerate(names) if n.startswith("proto=")]
    service = [j for j, n in enumerate(names) if n.startswith("service=")]
    assert [names[j] for j in proto] == ["proto=icmp", "proto=tcp", "proto=udp"]
    np.testing.assert_array_equal(X[:, proto].sum(axis=1), 1.0)
    np.testing.assert_array_equal(X[:, service].sum(axis=1), 1.0)
    # 83 feature columns, 2 of them text: 81 numeric columns plus the declared indicator blocks.
    assert X.shape[1] == 81 + 3 + 10
    # The first data record, parsed independently with the csv module.
    with gzip.open(path, "rt", newline="") as f:
        reader = csv.reader(f)
        head, first = next(reader), next(reader)
    assert head[0] == "" and names[0] == head[1] == "id.orig_p"
    numeric = [
        (h, float(v)) for h, v in zip(head[1:-1], first[1:-1], strict=True) if h not in ("proto", "service")
    ]
    for h, v in numeric:
        assert X[0, names.index(h)] == v
    assert X[0, names.index(f"proto={first[3]}")] == 1.0
    assert y[0] == first[-1]


# ------------------------------------------------------------------------------------------------
# IDX
# ------------------------------------------------------------------------------------------------


def _write_idx(tmp_path: Path, images: np.ndarray, labels: np.ndarray) -> tuple[Path, Path]:
    n, r, c = images.shape
    ip, lp = tmp_path / "tiny-images-idx3-ubyte", tmp_path / "tiny-labels-idx1-ubyte"
    ip.write_bytes(struct.pack(">IIII", 2051, n, r, c) + images.astype(np.uint8).tobytes())
    lp.write_bytes(struct.pack(">II", 2049, n) + labels.astype(np.uint8).tobytes())
    return ip, lp


def test_idx_small_and_gzip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(4, 3, 2))
    labels = np.array([3, 0, 9, 7])
    ip, lp = _write_idx(tmp_path, images, labels)
    X, y = ds.load_idx(ip, lp)
    np.testing.assert_array_equal(X, images.reshape(4, 6))
    np.testing.assert_array_equal(y, labels)
    assert X.dtype == np.float64
    Xg, yg = ds.load_idx(_gzip_copy(ip), _gzip_copy(lp))
    np.testing.assert_array_equal(Xg, X)
    np.testing.assert_array_equal(yg, y)
    X_only, none = ds.load_idx(str(ip))
    assert none is None and X_only.shape == (4, 6)


def test_idx_errors(tmp_path: Path) -> None:
    images = np.zeros((2, 2, 2))
    ip, lp = _write_idx(tmp_path, images, np.array([1, 2]))
    with pytest.raises(ds.DatasetFormatError, match=r"magic number is 2049.*expected 2051"):
        ds.load_idx(lp)  # labels given as images
    with pytest.raises(ValueError, match="labels_path.*magic number is 2051"):
        ds.load_idx(ip, ip)
    truncated = tmp_path / "cut-images-idx3-ubyte"
    truncated.write_bytes(ip.read_bytes()[:-1])
    with pytest.raises(ds.DatasetFormatError, match="truncated"):
        ds.load_idx(truncated)
    three = tmp_path / "three-labels-idx1-ubyte"
    three.write_bytes(struct.pack(">II", 2049, 3) + bytes([1, 2, 3]))
    with pytest.raises(ds.DatasetFormatError, match="3 labels.*2 images"):
        ds.load_idx(ip, three)


# ------------------------------------------------------------------------------------------------
# CSV
# ------------------------------------------------------------------------------------------------

CSV_TEXT = """\
,age,proto,bytes,label
0,31,tcp,100.5,normal
1,45,udp,7,attack
2,27,tcp,0,normal
3,60,icmp,1e3,scan
"""


def test_csv_header_text_column_and_labels(tmp_path: Path) -> None:
    path = tmp_path / "small.csv"
    path.write_text(CSV_TEXT)
    data = ds.load(path, label_column="label", drop_columns=[0],
                   categories={"proto": ["icmp", "tcp", "udp"]})
    expected = np.array(
        [
            # age, proto=icmp, proto=tcp, proto=udp, bytes
            [31, 0, 1, 0, 100.5],
            [45, 0, 0, 1, 7],
            [27, 0, 1, 0, 0],
            [60, 1, 0, 0, 1000],
        ],
        dtype=float,
    )
    np.testing.assert_array_equal(data.X, expected)
    assert data.feature_names == ("age", "proto=icmp", "proto=tcp", "proto=udp", "bytes")
    assert data.y is not None
    assert data.y.tolist() == ["normal", "attack", "normal", "scan"]
    # Same result by position (negative) and by the empty index-column name; gzip alike.
    X2, y2 = ds.load_csv(_gzip_copy(path), label_column=-1, drop_columns="",
                         categories={2: ["icmp", "tcp", "udp"]})
    np.testing.assert_array_equal(X2, expected)
    np.testing.assert_array_equal(y2, data.y)


def test_csv_undeclared_text_column_is_refused_naming_the_column_not_a_value(tmp_path: Path) -> None:
    # Old code: one-hot encoded by default, with the private values as feature names.
    path = tmp_path / "small.csv"
    path.write_text(CSV_TEXT)
    for mode in ("declared", "raise"):
        expected = r"column 'proto' \(position 2\).*not numeric.*--categories"
        with pytest.raises(ValueError, match=expected) as err:
            ds.load_csv(path, label_column="label", drop_columns=[0], categorical=mode)
        message = str(err.value).replace(str(path), "<path>")  # the tmp path may hold any digits
        for value in ("tcp", "udp", "icmp", "normal", "31"):
            assert value not in message
    X, _ = ds.load_csv(path, label_column=-1, drop_columns=[0, "proto"])
    assert X.shape == (4, 2)
    with pytest.raises(ValueError, match="'categorical'.*'onehot'"):
        ds.load_csv(path, categorical="onehot")  # the old data-derived default is gone by that name
    # The explicit, documented non-private mode keeps the old encoding (for public data / papers).
    names = ds.load(path, label_column=-1, drop_columns=[0], categorical="from_data").feature_names
    assert names == ("age", "proto=icmp", "proto=tcp", "proto=udp", "bytes")


def test_csv_declared_categories_fix_width_and_names(tmp_path: Path) -> None:
    # The width and the names come from the declaration only; a value outside it (here 'gre', and a
    # header-like typo) gets an all-zero indicator row and never becomes a column or a name.
    path = tmp_path / "c.csv"
    path.write_text("a,proto\n1,tcp\n2, udp \n3,gre\n4,TCP\n")
    data = ds.load(path, categories={"proto": ["udp", "tcp", "icmp"]})
    assert data.feature_names == ("a", "proto=udp", "proto=tcp", "proto=icmp")
    np.testing.assert_array_equal(
        data.X, [[1, 0, 1, 0], [2, 1, 0, 0], [3, 0, 0, 0], [4, 0, 0, 0]]
    )
    other = tmp_path / "d.csv"
    other.write_text("a,proto\n1,secret_value_1\n2,secret_value_2\n")
    d2 = ds.load(other, categories={"proto": ["udp", "tcp", "icmp"]})
    assert d2.feature_names == data.feature_names
    np.testing.assert_array_equal(d2.X[:, 1:], 0.0)
    assert not any("secret" in n for n in d2.feature_names)
    # Errors in the declaration (public) may quote it.
    with pytest.raises(ValueError, match="twice"):
        ds.load(path, categories={"proto": ["tcp", " tcp"]})
    with pytest.raises(ValueError, match="no category"):
        ds.load(path, categories={"proto": []})
    with pytest.raises(TypeError, match="list of str"):
        ds.load(path, categories={"proto": "tcp"})
    with pytest.raises(TypeError, match="dict"):
        ds.load(path, categories=["proto"])
    with pytest.raises(ValueError, match="'categories'.*'nope'.*not in"):
        ds.load(path, categories={"nope": ["x"]})
    with pytest.raises(ValueError, match="label column"):
        ds.load(path, label_column="proto", categories={"proto": ["tcp"]})
    with pytest.raises(ValueError, match="not a feature column"):
        ds.load(path, drop_columns=["proto"], categories={"proto": ["tcp"]})


@pytest.mark.parametrize("chunk_rows", [64, 16384])
def test_csv_stray_cell_in_numeric_column_is_an_error_naming_the_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int
) -> None:
    # Old code: one stray 'abc' turned the column into one indicator column per distinct value and
    # loaded silently. Now: an error naming the column, not the value nor the row, wherever the cell
    # is (in the sniffed sample or after it, in the fast or the chunked path).
    monkeypatch.setattr(ds, "_CSV_CHUNK_ROWS", chunk_rows)
    for at in (3, 137, 251, 499):  # record numbers that appear nowhere else in the message
        lines = ["f1,f2,y"] + [f"{'abc' if i == at else i * 0.5},{i % 7},{i % 2}" for i in range(500)]
        path = tmp_path / f"stray{at}.csv"
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(ValueError, match=r"column 'f1' \(position 0\).*not numeric") as err:
            ds.load(path, label_column="y")
        text = str(err.value)
        assert "abc" not in text and str(at) not in text.replace(str(path), "").replace("(position 0)", "")


def test_csv_header_is_declared_not_guessed(tmp_path: Path) -> None:
    # Old code guessed: a numeric header was fitted as data (no way to declare one), and a record
    # with a text cell in a numeric column could be taken as the header (its values as names).
    path = tmp_path / "numhead.csv"
    path.write_text("10,20\n1,2\n3,4\n")
    with pytest.raises(ValueError, match=r"header.*looks like data.*header=False.*header=True") as err:
        ds.load(path)
    assert "10" not in str(err.value).replace(str(path), "")
    data = ds.load(path, header=True)
    assert data.feature_names == ("10", "20")
    np.testing.assert_array_equal(data.X, [[1, 2], [3, 4]])
    data = ds.load(path, header=False)
    assert data.feature_names == ("x0", "x1")
    np.testing.assert_array_equal(data.X, [[10, 20], [1, 2], [3, 4]])
    # A headerless file whose first record holds a declared category is not taken as a header.
    cpath = tmp_path / "cat.csv"
    cpath.write_text("tcp,udp\nudp,tcp\n")
    with pytest.raises(ValueError, match="looks like data"):
        ds.load(cpath, categories={0: ["tcp", "udp"], 1: ["tcp", "udp"]})
    # header=False: a text header is a non-numeric cell, and the message says how to declare it.
    tpath = tmp_path / "texthead.csv"
    tpath.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"position 0.*header=True \(--header\)"):
        ds.load(tpath, header=False)
    with pytest.raises(ValueError, match="'header'.*'infer'"):
        ds.load(tpath, header="infer")


def test_csv_column_errors(tmp_path: Path) -> None:
    path = tmp_path / "small.csv"
    path.write_text(CSV_TEXT)
    with pytest.raises(ValueError, match=r"'label_column'.*'Label'.*not in"):
        ds.load_csv(path, label_column="Label")
    with pytest.raises(ValueError, match=r"'label_column'.*\[-5, 4\].*Got 5"):
        ds.load_csv(path, label_column=5)
    with pytest.raises(TypeError, match="'label_column'"):
        ds.load_csv(path, label_column=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="drop_columns"):
        ds.load_csv(path, label_column="label", drop_columns=["label"])
    with pytest.raises(ValueError, match="'header'.*'yes'"):
        ds.load_csv(path, header="yes")  # type: ignore[arg-type]


def test_csv_without_header(tmp_path: Path) -> None:
    rows = np.arange(12, dtype=float).reshape(4, 3)
    path = tmp_path / "plain.csv"
    np.savetxt(path, rows, delimiter=",")
    X, y = ds.load_csv(path, label_column=0, header=False)
    np.testing.assert_array_equal(X, rows[:, 1:])
    assert y is not None and y.dtype == np.int64
    np.testing.assert_array_equal(y, [0, 3, 6, 9])
    with pytest.raises(ValueError, match="no header row"):
        ds.load_csv(path, label_column="x0", header=False)
    # header=True turns the first record into names.
    Xh, _ = ds.load_csv(path, header=True)
    np.testing.assert_array_equal(Xh, rows[1:])
    # A text column without a header, declared by position.
    tpath = tmp_path / "text.csv"
    tpath.write_text("a,1\nb,2\na,3\n")
    Xt, _ = ds.load_csv(tpath, header=False, categories={0: ["a", "b"]})
    np.testing.assert_array_equal(Xt, [[1, 0, 1], [0, 1, 2], [1, 0, 3]])


@pytest.mark.parametrize("chunk_rows", [64, 16384])
def test_csv_missing_values_and_late_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int
) -> None:
    # More rows than the sniffing sample, with a missing number and, far down, a text value in a
    # column that looked numeric: both must be handled, not silently misread. With small chunks
    # the text value appears after chunks already parsed as numbers (the column is re-read).
    monkeypatch.setattr(ds, "_CSV_CHUNK_ROWS", chunk_rows)
    n = 500
    lines = ["f1,f2,y"]
    for i in range(n):
        f2 = "" if i == 3 else ("?" if i == 4 else str(i % 7))
        f1 = "late" if i == n - 1 else str(i)
        lines.append(f"{f1},{f2},{i % 2}")
    path = tmp_path / "dirty.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"'f1'.*not numeric") as err:
        ds.load(path, label_column="y")
    assert "late" not in str(err.value)
    # Dropping the bad column: the missing numbers are NaN.
    data = ds.load(path, label_column="y", drop_columns=["f1"])
    f2 = data.X[:, data.feature_names.index("f2")]
    assert np.isnan(f2[3]) and np.isnan(f2[4])
    assert f2[10] == 10 % 7
    np.testing.assert_array_equal(data.y, np.arange(n) % 2)
    # The non-private mode still one-hot encodes from the data (the former default).
    data = ds.load(path, label_column="y", categorical="from_data")
    assert data.feature_names is not None
    f1_cols = [j for j, nm in enumerate(data.feature_names) if nm.startswith("f1=")]
    assert len(f1_cols) == n
    assert data.X[n - 1, data.feature_names.index("f1=late")] == 1.0
    with pytest.raises(ValueError, match="max_categories"):
        ds.load_csv(path, label_column="y", max_categories=100, categorical="from_data")
    # Declared, the same column has exactly the declared width: 'late' and the numbers are outside.
    data = ds.load(path, label_column="y", categories={"f1": ["0", "1", "late"]})
    assert data.feature_names == ("f1=0", "f1=1", "f1=late", "f2")
    np.testing.assert_array_equal(data.X[:, :3].sum(axis=0), [1, 1, 1])


def test_csv_ragged_and_empty(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("1,2,3\n4,5\n")
    with pytest.raises(ds.DatasetFormatError, match="a different number of fields") as err:
        ds.load_csv(path, header=False)
    assert "2" not in str(err.value).replace(str(path), "")  # neither the record nor its width
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ds.DatasetFormatError, match="no records"):
        ds.load_csv(empty)


# ------------------------------------------------------------------------------------------------
# NPY / NPZ
# ------------------------------------------------------------------------------------------------


def test_npz_and_npy(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 3)).astype(np.float32)
    y = np.array([0, 1, 1, 0, 2])
    npz = tmp_path / "d.npz"
    np.savez(npz, X=X, y=y)
    Xl, yl = ds.load_npy(npz)
    assert Xl.dtype == np.float64
    np.testing.assert_array_equal(Xl, X.astype(np.float64))
    np.testing.assert_array_equal(yl, y)
    other = tmp_path / "o.npz"
    np.savez(other, feats=X, target=y)
    with pytest.raises(ValueError, match=r"'key'.*\['feats', 'target'\]"):
        ds.load_npy(other)
    Xo, yo = ds.load_npy(other, key="feats", label_key="target")
    np.testing.assert_array_equal(Xo, Xl)
    np.testing.assert_array_equal(yo, y)
    with pytest.raises(ValueError, match="'label_key'.*'labels'"):
        ds.load_npy(other, key="feats", label_key="labels")
    Xg, yg = ds.load_npy(_gzip_copy(npz))
    np.testing.assert_array_equal(Xg, Xl)
    np.testing.assert_array_equal(yg, y)

    npy = tmp_path / "d.npy"
    np.save(npy, X)
    Xm, none = ds.load_npy(npy, mmap_mode="r")
    assert isinstance(Xm, np.memmap) and none is None
    np.testing.assert_array_equal(Xm, X)
    np.testing.assert_array_equal(ds.load_npy(_gzip_copy(npy))[0], Xl)
    with pytest.raises(ValueError, match="'mmap_mode'"):
        ds.load_npy(tmp_path / "d.npy.gz", mmap_mode="r")
    with pytest.raises(ValueError, match="'key'.*npz"):
        ds.load_npy(npy, key="X")
    images = tmp_path / "img.npy"
    np.save(images, np.zeros((2, 4, 4), dtype=np.uint8))
    assert ds.load_npy(images)[0].shape == (2, 16)
    flat = tmp_path / "flat.npy"
    np.save(flat, np.zeros(3))
    with pytest.raises(ds.DatasetFormatError, match=r"shape \(3,\)"):
        ds.load_npy(flat)


# ------------------------------------------------------------------------------------------------
# Parquet
# ------------------------------------------------------------------------------------------------


def test_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table(
        {
            "a": [1.5, 2.0, None],
            "kind": ["x", "y", "x"],
            "b": [1, 2, 3],
            "target": ["no", "yes", "no"],
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=r"'kind'.*not numeric") as err:
        ds.load(path, label_column="target")  # old code: one-hot from the data
    assert "'x'" not in str(err.value)
    data = ds.load(path, label_column="target", categories={"kind": ["x", "y"]})
    assert data.feature_names == ("a", "kind=x", "kind=y", "b")
    np.testing.assert_array_equal(data.X[:2], [[1.5, 1, 0, 1], [2.0, 0, 1, 2]])
    assert np.isnan(data.X[2, 0])
    assert data.y is not None and data.y.tolist() == ["no", "yes", "no"]
    X, y = ds.load_parquet(path, label_column="b", columns=["a"])
    assert X.shape == (3, 1)
    assert y is not None and y.dtype == np.int64
    np.testing.assert_array_equal(y, [1, 2, 3])
    Xg, _ = ds.load_parquet(_gzip_copy(path), label_column=-1, categories={1: ["x", "y"]})
    np.testing.assert_array_equal(Xg, data.X)
    Xz, _ = ds.load_parquet(path, label_column="target", categories={"kind": ["z"]})
    np.testing.assert_array_equal(Xz[:, 1], 0.0)  # outside the declaration: all-zero indicator
    with pytest.raises(TypeError, match="Arrow type"):
        ds.load_parquet(path, label_column="target", categories={"kind": ["x"], "b": ["1"]})
    assert ds.load(path, label_column="target", categorical="from_data").feature_names == data.feature_names
    with pytest.raises(ValueError, match="'label_column'.*'label'"):
        ds.load_parquet(path, label_column="label")


# ------------------------------------------------------------------------------------------------
# LIBSVM, dispatch, data home
# ------------------------------------------------------------------------------------------------


def test_libsvm_small_and_dispatch(tmp_path: Path) -> None:
    path = tmp_path / "small.txt"
    path.write_text("1 1:0.5 3:2\n-1 2:1\n")
    X, y = ds.load_libsvm(path, n_features=4)
    np.testing.assert_array_equal(X, [[0.5, 0, 2, 0], [0, 1, 0, 0]])
    np.testing.assert_array_equal(y, [1, -1])
    data = ds.load(_gzip_copy(path), n_features=4)  # unknown extension -> LIBSVM
    np.testing.assert_array_equal(data.X, X)
    assert data.feature_names is None and data.name == "small.txt"
    with pytest.raises(ValueError, match="'n_features'.*0"):
        ds.load_libsvm(path, n_features=0)
    # A CSV file with an unusual extension, by explicit format.
    csv_txt = tmp_path / "table.dat"
    csv_txt.write_text("u,v\n1,2\n3,4\n")
    np.testing.assert_array_equal(ds.load(csv_txt, format="csv").X, [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="'format'.*'arff'"):
        ds.load(csv_txt, format="arff")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected keyword"):
        ds.load(csv_txt, format="csv", n_features=3)


def test_data_home_and_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ds.DATA_HOME_ENV, raising=False)
    assert ds.data_home() is None
    (tmp_path / "sub").mkdir()
    np.save(tmp_path / "sub" / "a.npy", np.ones((2, 2)))
    monkeypatch.chdir(tmp_path / "sub")
    with pytest.raises(FileNotFoundError, match="'path'.*'sub/a.npy'"):
        ds.load("sub/a.npy")
    monkeypatch.setenv(ds.DATA_HOME_ENV, str(tmp_path))
    assert ds.data_home() == tmp_path
    np.testing.assert_array_equal(ds.load("sub/a.npy").X, np.ones((2, 2)))
    with pytest.raises(FileNotFoundError, match="also looked in"):
        ds.load("sub/missing.npy")
    monkeypatch.setenv(ds.DATA_HOME_ENV, str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="DPSPECTRAL_DATA"):
        ds.data_home()
    with pytest.raises(TypeError, match="'path'"):
        ds.load_csv(3)  # type: ignore[arg-type]


def test_get_data_home_follows_scikit_learns_convention(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The argument, else $DPSPECTRAL_DATA, else ~/dpspectral_data; never the working directory."""
    monkeypatch.delenv(ds.DATA_HOME_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dpspectral_data").mkdir()  # in the working directory: never used
    assert ds.get_data_home() == tmp_path / "user" / "dpspectral_data"
    assert ds.find_data_home() is None  # the per-user default is absent: no error, nothing created
    assert not (tmp_path / "user").exists()
    where = ds.data_home_sources()  # what the errors of the reproductions say
    assert "DPSPECTRAL_DATA (unset)" in where and "~/dpspectral_data" in where and "--data DIR" in where
    (tmp_path / "user" / "dpspectral_data").mkdir(parents=True)
    assert ds.find_data_home() == tmp_path / "user" / "dpspectral_data"

    monkeypatch.setenv(ds.DATA_HOME_ENV, str(tmp_path / "env"))
    assert ds.get_data_home() == tmp_path / "env"
    with pytest.raises(FileNotFoundError, match=r"does not exist.*DPSPECTRAL_DATA=.*env.*--data DIR"):
        ds.find_data_home()  # named explicitly but absent: an error saying where it looked
    (tmp_path / "env").mkdir()
    assert ds.find_data_home() == tmp_path / "env"

    assert ds.get_data_home("~/elsewhere") == tmp_path / "user" / "elsewhere"  # the argument wins
    with pytest.raises(FileNotFoundError, match="the folder given"):
        ds.find_data_home(tmp_path / "nope")
    assert ds.find_data_home(tmp_path / "env") == tmp_path / "env"
    with pytest.raises(TypeError, match="'data_home'"):
        ds.get_data_home(3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# Preprocessing
# ------------------------------------------------------------------------------------------------


def test_clip_rows_is_reexported() -> None:
    assert ds.clip_rows is clipping.clip_rows
    assert ds.row_norms is clipping.row_norms


def test_normalize_rows_nonprivate() -> None:
    X = np.array([[3.0, 4.0], [0.0, 1.0], [1.0, 1.0]])
    before = X.copy()
    Z = ds.normalize_rows_nonprivate(X)
    np.testing.assert_array_equal(X, before)  # caller data untouched
    np.testing.assert_allclose(Z, X / 5.0)
    assert np.max(np.linalg.norm(Z, axis=1)) == pytest.approx(1.0)
    Zs = ds.normalize_rows_nonprivate(sp.csr_matrix(X))
    assert sp.issparse(Zs)
    np.testing.assert_allclose(Zs.toarray(), X / 5.0)
    np.testing.assert_array_equal(ds.normalize_rows_nonprivate(np.zeros((2, 2))), 0.0)
    with pytest.raises(ValueError, match="finite"):
        ds.normalize_rows_nonprivate(np.array([[np.nan, 1.0]]))
    assert ds.normalize_rows_nonprivate.__doc__ is not None
    assert "NOT differentially private" in ds.normalize_rows_nonprivate.__doc__


# ------------------------------------------------------------------------------------------------
# Synthetic generators
# ------------------------------------------------------------------------------------------------


def _top_subspace(X: np.ndarray, k: int) -> np.ndarray:
    _, vecs = np.linalg.eigh(X.T @ X / X.shape[0])
    return vecs[:, ::-1][:, :k]


def test_spiked_covariance_shapes_and_subspace() -> None:
    n, d, k = 20000, 20, 3
    X, V = ds.spiked_covariance(n, d, k, spike=[20.0, 15.0, 10.0], noise=1.0, random_state=0)
    assert X.shape == (n, d) and V.shape == (d, k)
    np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-12)
    # Population covariance V diag(spike) V^T + I: the sample's top-k subspace is close to V.
    # Davis-Kahan with gap 10 and n = 20000 bounds the distance by about 0.1; observed ~0.04.
    U = _top_subspace(X, k)
    assert np.linalg.norm(U @ U.T - V @ V.T) < 0.15
    evals = np.linalg.eigvalsh(np.cov(X.T, bias=True))[::-1]
    np.testing.assert_allclose(evals[:k], [21.0, 16.0, 11.0], rtol=0.08)
    np.testing.assert_allclose(evals[k:], 1.0, rtol=0.15)


def test_decaying_spectrum_eigenvalues() -> None:
    n, d = 20000, 10
    X, V, lam = ds.decaying_spectrum(n, d, random_state=3)
    assert X.shape == (n, d) and V.shape == (d, d)
    np.testing.assert_allclose(V.T @ V, np.eye(d), atol=1e-12)
    np.testing.assert_allclose(lam, 1.0 / np.arange(1, d + 1))  # std j^-1/2
    # Sample covariance eigenvalues match within 8% (relative sd ~ sqrt(2/n) = 1%).
    evals = np.linalg.eigvalsh(X.T @ X / n)[::-1]
    np.testing.assert_allclose(evals, lam, rtol=0.08)
    # The standard deviation along V[:, j] is j^-decay.
    np.testing.assert_allclose((X @ V).std(axis=0), np.arange(1, d + 1) ** -0.5, rtol=0.05)
    _, _, lam1 = ds.decaying_spectrum(10, 4, decay=1.0, random_state=3)
    np.testing.assert_allclose(lam1, [1, 1 / 4, 1 / 9, 1 / 16])


def test_gaussian_data_given_basis_and_noise() -> None:
    basis = np.eye(4)[:, :2]
    X, V = ds.gaussian_data(30000, 4, eigenvalues=[4.0, 1.0], basis=basis, noise=0.5, random_state=5)
    assert V is not None and np.array_equal(V, basis)
    np.testing.assert_allclose(X.var(axis=0), [4.25, 1.25, 0.25, 0.25], rtol=0.05)
    with pytest.raises(ValueError, match="'basis'.*orthonormal"):
        ds.gaussian_data(5, 2, eigenvalues=[1.0, 1.0], basis=np.ones((2, 2)))
    with pytest.raises(ValueError, match="'eigenvalues'"):
        ds.gaussian_data(5, 2, eigenvalues=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="'eigenvalues'"):
        ds.gaussian_data(5, 2, eigenvalues=[-1.0])


def test_generators_deterministic_and_leave_global_rng_alone() -> None:
    np.random.seed(123)  # noqa: NPY002 - checks the global state is left alone
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    a = ds.spiked_covariance(50, 6, 2, random_state=7)
    b = ds.spiked_covariance(50, 6, 2, random_state=7)
    c = ds.spiked_covariance(50, 6, 2, random_state=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.allclose(a[0], c[0])
    np.testing.assert_array_equal(
        ds.decaying_spectrum(20, 5, random_state=1)[0], ds.decaying_spectrum(20, 5, random_state=1)[0]
    )
    rng = np.random.default_rng(0)
    first = ds.random_orthonormal(5, 2, random_state=rng)
    second = ds.random_orthonormal(5, 2, random_state=rng)  # a Generator is advanced
    assert not np.allclose(first, second)
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_generator_parameter_errors() -> None:
    with pytest.raises(ValueError, match=r"'k'.*d=3.*Got 4"):
        ds.spiked_covariance(10, 3, 4)
    with pytest.raises(ValueError, match="'spike'"):
        ds.spiked_covariance(10, 3, 2, spike=[1.0, 0.0])
    with pytest.raises(ValueError, match="'spike'"):
        ds.spiked_covariance(10, 3, 2, spike=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="'noise'.*-1"):
        ds.spiked_covariance(10, 3, 1, noise=-1.0)
    with pytest.raises(TypeError, match="'n'.*2.5"):
        ds.decaying_spectrum(2.5, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'decay'"):
        ds.decaying_spectrum(10, 3, decay=float("nan"))
    with pytest.raises(ValueError, match="'d'.*0"):
        ds.random_orthonormal(0, 1)
