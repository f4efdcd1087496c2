"""Option groups: the old keywords keep working for one release and say where they moved."""

import warnings

import pytest

from dpspectral._options import AdaptiveClip, folded


@folded("adaptive_clip", AdaptiveClip, {"clip_quantile": "quantile", "clip_share": "share"})
def _method(x, *, adaptive_clip=True):
    return adaptive_clip


def test_old_keywords_build_the_group_with_a_future_warning():
    with pytest.warns(FutureWarning, match=r"'clip_share' of _method moved into 'adaptive_clip'"):
        assert _method(1, clip_share=0.2) == AdaptiveClip(share=0.2)


def test_old_keywords_replace_fields_of_a_given_group():
    with pytest.warns(FutureWarning):
        got = _method(1, adaptive_clip=AdaptiveClip(quantile=0.9), clip_share=0.3)
    assert got == AdaptiveClip(quantile=0.9, share=0.3)


def test_old_keywords_leave_a_disabled_group_off():
    with pytest.warns(FutureWarning):
        assert _method(1, adaptive_clip=False, clip_quantile=0.5) is False


def test_no_warning_without_old_keywords():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _method(1) is True
        assert _method(1, adaptive_clip=AdaptiveClip(share=0.1)) == AdaptiveClip(share=0.1)
    assert _method.folded_parameters == {"clip_quantile": "adaptive_clip.quantile",
                                         "clip_share": "adaptive_clip.share"}
