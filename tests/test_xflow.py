"""The data of one ``analyze_gauss`` call move up the layers only where the release template hands
them to the mechanism's pieces (``tools/xflow.py``: every frame of the library that holds the data,
and the module that handed them to it)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

import dpspectral._moments as moments
import dpspectral.pca._covariance as covariance

ROOT = Path(__file__).resolve().parents[1]
#: The upward moves of one analyze_gauss call: the constraint check handing X to the function, and the
#: template handing it to the mechanism's check, read, statistics (and their deferred parts) and
#: post-processing. One more is a callback up the layers that the design does not have.
MAX_UPWARD = 8


def _tool(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


xflow = _tool("xflow")


@pytest.fixture(scope="module")
def data_inputs(tmp_path_factory):
    return xflow.inputs(str(tmp_path_factory.mktemp("xflow")))


def test_the_layers_follow_the_imports():
    layer = xflow.layers()
    assert layer["dpspectral._rows"] < layer["dpspectral._moments"] < layer["dpspectral.privacy._pipeline"]
    assert layer["dpspectral.privacy._pipeline"] < layer["dpspectral.privacy._template"]
    assert layer["dpspectral.privacy._template"] < layer["dpspectral.pca._covariance"]
    assert layer["dpspectral.pca._covariance"] < layer["dpspectral._estimators"] < layer["dpspectral.cli"]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["ndarray", "memmap", "dask"])
def test_the_data_move_up_only_into_the_mechanism(data_inputs, index):
    if index >= len(data_inputs):
        pytest.skip("dask is not installed")
    name, X = data_inputs[index]
    flow = xflow.analyze_gauss_flow(X)
    assert {"dpspectral._rows", "dpspectral._moments", "dpspectral.privacy._template",
            "dpspectral.pca._covariance"} <= set(flow.path), flow.path  # the tracer sees the data
    assert flow.upward <= MAX_UPWARD, (name, flow.summary(), flow.upward_moves())
    assert all(b == "dpspectral.pca._covariance" for _, b in flow.upward_moves()), flow.upward_moves()


def _in_module(function: types.FunctionType, module: types.ModuleType) -> types.FunctionType:
    """``function`` as if defined in ``module`` (its frames report that module)."""
    return types.FunctionType(function.__code__, vars(module), function.__name__, function.__defaults__,
                              function.__closure__)


def test_a_callback_up_the_layers_is_counted(data_inputs, monkeypatch):
    """Negative control: the row-norm helper of the block accumulation hands each block to a function
    of the mechanism module (a helper that belongs in the leaf, reached upward) - one more upward move
    per block, over the bound."""
    original = moments._dense_row_norms

    def helper(block):
        return block

    callback = _in_module(helper, covariance)

    def factory():
        def norms(block, *args, **kwargs):
            callback(block)
            return original(block, *args, **kwargs)
        return norms

    monkeypatch.setattr(moments, "_dense_row_norms", _in_module(factory(), moments))
    flow = xflow.analyze_gauss_flow(data_inputs[0][1])
    assert ("dpspectral._moments", "dpspectral.pca._covariance") in flow.upward_moves()
    assert flow.upward > MAX_UPWARD


def test_the_counts_on_a_path_written_by_hand():
    flow = xflow.Flow(path=["dpspectral.privacy._template", "dpspectral.pca._covariance", "dpspectral._rows",
                            "dpspectral.pca._covariance"],
                      edges=[("dpspectral.privacy._template", "dpspectral.pca._covariance"),
                             ("dpspectral.pca._covariance", "dpspectral._rows"),
                             ("dpspectral._rows", "dpspectral.pca._covariance")])
    assert (flow.modules, flow.moves, flow.returns, flow.upward) == (3, 3, 1, 2)
    assert flow.upward_moves() == [("dpspectral.privacy._template", "dpspectral.pca._covariance"),
                                   ("dpspectral._rows", "dpspectral.pca._covariance")]
