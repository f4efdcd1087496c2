"""dp_spca and dp_vrpca take their adaptive clipping as one option group (``adaptive_clip``)."""

from __future__ import annotations

import numpy as np
import pytest

from dpspectral import DPPCA, AdaptiveClip, dp_spca, dp_vrpca
from dpspectral.privacy._accounting import Accountant

METHODS = [dp_spca, dp_vrpca]
PRIVACY = dict(epsilon=1.0, delta=1e-5, row_norm=1.0)


def _data() -> np.ndarray:
    rng = np.random.default_rng(5)
    return rng.normal(size=(150, 6)) * np.linspace(1.0, 0.2, 6) / 3


@pytest.mark.parametrize("method", METHODS, ids=lambda f: f.__name__)
def test_the_old_keyword_is_the_group_with_a_warning(method):
    """``clip_share=s`` runs exactly as ``adaptive_clip=AdaptiveClip(share=s)`` (same seed: the same
    components and events) and warns; the share reaches the histogram (a different share, other events)."""
    X = _data()
    with pytest.warns(FutureWarning, match="adaptive_clip=AdaptiveClip") as caught:
        old = method(X, 2, **PRIVACY, random_state=1, clip_share=0.1)
    assert caught[0].filename == __file__  # points at the caller, through the wrappers
    new = method(X, 2, **PRIVACY, random_state=1, adaptive_clip=AdaptiveClip(share=0.1))
    np.testing.assert_array_equal(old.components, new.components)
    assert old.privacy.events == new.privacy.events
    default = method(X, 2, **PRIVACY, random_state=1, adaptive_clip=True)
    assert default.privacy.events[0] != new.privacy.events[0]
    assert new.diagnostics["histogram_noise_std"] < default.diagnostics["histogram_noise_std"]


@pytest.mark.parametrize("method", METHODS, ids=lambda f: f.__name__)
def test_the_group_off_or_with_a_bad_field_is_refused_or_ignored_as_stated(method):
    X = _data()
    acc = Accountant()
    with pytest.raises(ValueError, match="quantile"):  # the clip comes from the balance rule
        method(X, 2, **PRIVACY, accountant=acc, adaptive_clip=AdaptiveClip(quantile=0.9))
    with pytest.raises(ValueError, match="share"):
        method(X, 2, **PRIVACY, accountant=acc, adaptive_clip=AdaptiveClip(share=0.0))
    assert acc.entries == ()
    with pytest.warns(FutureWarning):  # off: the old keyword changes nothing
        off = method(X, 2, **PRIVACY, random_state=2, adaptive_clip=False, clip_share=0.3)
    plain = method(X, 2, **PRIVACY, random_state=2, adaptive_clip=False)
    np.testing.assert_array_equal(off.components, plain.components)
    assert "clip" not in off.diagnostics
    with pytest.warns(FutureWarning):  # NumPy's False is off too
        numpy_off = method(X, 2, **PRIVACY, random_state=2, adaptive_clip=np.False_, clip_share=0.3)
    np.testing.assert_array_equal(numpy_off.components, plain.components)
    assert "clip" not in method(X, 2, **PRIVACY, random_state=2, adaptive_clip=np.False_).diagnostics


def test_dppca_clip_share_reaches_the_method_as_the_group():
    X = _data()
    kw = dict(n_components=2, **PRIVACY, method="dp_spca", centering=None, random_state=3)
    est = DPPCA(**kw, clip_share=0.1).fit(X)
    ref = dp_spca(X, 2, **PRIVACY, random_state=3, adaptive_clip=AdaptiveClip(share=0.1))
    assert est.privacy_.events == ref.privacy.events
    off = DPPCA(**kw, clip_share=0.1, adaptive_clip=False).fit(X)
    assert len(off.privacy_.events) == 1  # no histogram


@pytest.mark.parametrize("method", METHODS, ids=lambda f: f.__name__)
def test_a_one_shot_stream_is_refused_before_anything(method):
    """The steps sample rows at random: a generator of blocks is refused unread, nothing charged."""
    X = _data()
    read = []

    def blocks():
        for a in range(0, X.shape[0], 50):
            read.append(a)
            yield X[a:a + 50]

    acc = Accountant()
    with pytest.raises(TypeError, match="random access"):
        method(blocks(), 2, **PRIVACY, accountant=acc)
    assert read == [] and acc.entries == ()
