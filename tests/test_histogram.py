"""Shift operator, overlap set and peak decoding of ``patchpose.histogram``."""

from __future__ import annotations

import pytest
import torch

from patchpose.histogram import decode, overlap_mask, refine_peaks, shift_histogram, top_peaks


def _d(*v):
    return torch.tensor(v, dtype=torch.float64)


# ----------------------------------------------------------------------------- shift_histogram


@pytest.mark.parametrize("d", [0, 1, 3, -2, 35, 36, 40, -37])
def test_integer_circular_shift_is_left_roll(d):
    """T^d h(i) = h(i+d): an integer circular shift is torch.roll by −d (a left shift)."""
    h = torch.randn(3, 36, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    out = shift_histogram(h, _d(d, d, d), circular=True)
    torch.testing.assert_close(out, torch.roll(h, -d, dims=1), rtol=0, atol=1e-12)


def test_integer_shift_per_row():
    """Each row is shifted by its own d."""
    h = torch.arange(10, dtype=torch.float64).repeat(2, 1)
    out = shift_histogram(h, _d(1, -2), circular=True)
    torch.testing.assert_close(out[0], torch.roll(h[0], -1))
    torch.testing.assert_close(out[1], torch.roll(h[1], 2))


def test_linear_integer_shift_moves_left_and_fills():
    """Linear T^2 h: out[i] = h[i+2], the last two bins come from outside and get `fill`."""
    h = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], dtype=torch.float64)
    out = shift_histogram(h, _d(2), circular=False, fill=-7.0)
    torch.testing.assert_close(out, torch.tensor([[3.0, 4.0, 5.0, -7.0, -7.0]], dtype=torch.float64))
    out = shift_histogram(h, _d(-1), circular=False)
    torch.testing.assert_close(out, torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0]], dtype=torch.float64))


def test_linear_shift_entirely_out_of_range_is_all_fill():
    """Shifting a linear histogram by ≥ B bins leaves only `fill`."""
    h = torch.rand(2, 13, dtype=torch.float64)
    out = shift_histogram(h, _d(13, -20.5), circular=False, fill=3.0)
    torch.testing.assert_close(out, torch.full_like(h, 3.0))


def test_fractional_linear_shift_hand_computed():
    """T^0.25 and T^−0.5 of [0,1,2,3,4] (fill 0) equal the linear interpolation worked by hand."""
    h = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    out = shift_histogram(h, _d(0.25, -0.5), circular=False, fill=0.0)
    # d = 0.25: out[i] = 0.75 h[i] + 0.25 h[i+1], h[5] := 0
    # d = -0.5: out[i] = 0.5 h[i-1] + 0.5 h[i], h[-1] := 0
    expected = torch.tensor([[0.25, 1.25, 2.25, 3.25, 3.0], [0.0, 0.5, 1.5, 2.5, 3.5]], dtype=torch.float64)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_fractional_circular_shift_hand_computed():
    """Circular T^1.5 of a one-hot at bin 0 (B=5) puts 0.5 on bins 3 and 4; T^−0.25 gives 0.75/0.25."""
    h = torch.tensor([[1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    out = shift_histogram(h, _d(1.5, -0.25), circular=True)
    # d = 1.5: out[i] = 0.5 h[i+1] + 0.5 h[i+2]  -> nonzero at i = 4 (i+1 = 5 ≡ 0) and i = 3 (i+2 ≡ 0)
    # d = -0.25: out[i] = 0.25 h[i-1] + 0.75 h[i] -> 0.75 at 0, 0.25 at 1
    expected = torch.tensor([[0.0, 0.0, 0.0, 0.5, 0.5], [0.75, 0.25, 0.0, 0.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_fractional_shift_fill_only_weights_outside_part():
    """For linear d=0.5 the last bin mixes h[B−1] with fill (0.5·h + 0.5·fill)."""
    h = torch.tensor([[2.0, 4.0, 6.0]], dtype=torch.float64)
    out = shift_histogram(h, _d(0.5), circular=False, fill=10.0)
    torch.testing.assert_close(out, torch.tensor([[3.0, 5.0, 8.0]], dtype=torch.float64))


def test_circular_shift_preserves_mass_for_any_d():
    """A circular shift of a probability histogram still sums to 1 (any real d)."""
    p = torch.rand(5, 36, dtype=torch.float64).softmax(1)
    out = shift_histogram(p, _d(0.3, -4.7, 12.5, 100.1, -0.999), circular=True)
    torch.testing.assert_close(out.sum(1), torch.ones(5, dtype=torch.float64))
    assert bool((out >= 0).all())


@pytest.mark.parametrize("d", [1, 2, 5, -3])
def test_linear_shift_then_inverse_is_identity_on_interior(d):
    """T^−d T^d h == h on the bins that never left the range (integer d, linear histogram)."""
    h = torch.rand(2, 13, dtype=torch.float64)
    dd = torch.full((2,), float(d), dtype=torch.float64)
    back = shift_histogram(shift_histogram(h, dd, circular=False, fill=-1.0), -dd, circular=False, fill=-1.0)
    keep = slice(d, 13) if d >= 0 else slice(0, 13 + d)
    torch.testing.assert_close(back[:, keep], h[:, keep], rtol=0, atol=1e-12)
    assert bool((back[:, slice(0, d) if d >= 0 else slice(13 + d, 13)] == -1.0).all())


@pytest.mark.parametrize("d", [1, 7, -11, 36, 50])
def test_circular_shift_then_inverse_is_exact_identity(d):
    """T^−d T^d h == h exactly for circular integer shifts."""
    h = torch.rand(3, 36, dtype=torch.float64)
    dd = torch.full((3,), float(d), dtype=torch.float64)
    back = shift_histogram(shift_histogram(h, dd, circular=True), -dd, circular=True)
    assert torch.equal(back, h)


def test_shift_composes_additively_for_integers():
    """T^a T^b h == T^(a+b) h for circular integer shifts."""
    h = torch.rand(1, 36, dtype=torch.float64)
    ab = shift_histogram(shift_histogram(h, _d(4), True), _d(-9), True)
    torch.testing.assert_close(ab, shift_histogram(h, _d(-5), True), rtol=0, atol=0)


def test_shift_is_differentiable_in_h():
    """Gradients flow through the shift to the histogram."""
    h = torch.rand(2, 13, dtype=torch.float64, requires_grad=True)
    shift_histogram(h, _d(0.3, -1.6), circular=False).sum().backward()
    assert h.grad is not None and bool(torch.isfinite(h.grad).all())
    assert float(h.grad.abs().sum()) > 0


def test_shift_rejects_bad_shapes():
    """h must be (N, B) and d (N,)."""
    with pytest.raises(ValueError):
        shift_histogram(torch.rand(13), _d(1), circular=False)
    with pytest.raises(ValueError):
        shift_histogram(torch.rand(2, 13), _d(1), circular=False)


# ----------------------------------------------------------------------------- overlap_mask


def test_overlap_mask_positive_integer_shift():
    """d = 2 (B=13): B = {0, …, 10}."""
    m = overlap_mask(13, _d(2))
    assert m.shape == (1, 13)
    assert m[0].tolist() == [True] * 11 + [False] * 2


def test_overlap_mask_negative_integer_shift():
    """d = −3 (B=13): B = {3, …, 12}."""
    m = overlap_mask(13, _d(-3))
    assert m[0].tolist() == [False] * 3 + [True] * 10


def test_overlap_mask_fractional_shift_rounds():
    """d = 0.4 rounds to 0: every bin; d = 1.6 rounds to 2; d = −2.6 rounds to −3."""
    m = overlap_mask(13, _d(0.4, 1.6, -2.6))
    assert m[0].all()
    assert m[1].tolist() == [True] * 11 + [False] * 2
    assert m[2].tolist() == [False] * 3 + [True] * 10


def test_overlap_mask_marks_exactly_bins_where_shifted_histogram_is_defined():
    """For integer d, B is where T^d h' did not come from outside the range."""
    for d in range(-12, 13):
        h = torch.ones(1, 13, dtype=torch.float64)
        inside = shift_histogram(h, _d(d), circular=False, fill=0.0)[0] == 1.0
        assert overlap_mask(13, _d(d))[0].tolist() == inside.tolist(), d


# ----------------------------------------------------------------------------- peaks


def test_refine_peaks_recovers_parabola_vertex():
    """Values of −(x−5.3)² refine from peak bin 5 to 5.3 (1e−6)."""
    x = torch.arange(13, dtype=torch.float64)
    h = -((x - 5.3) ** 2)
    out = refine_peaks(h[None], torch.tensor([[5]]), circular=False)
    assert out.shape == (1, 1)
    assert float(out[0, 0]) == pytest.approx(5.3, abs=1e-6)
    out = refine_peaks(h[None], torch.tensor([[5]]), circular=True)
    assert float(out[0, 0]) == pytest.approx(5.3, abs=1e-6)


def test_refine_peaks_recovers_vertex_below_peak_bin():
    """A vertex at 7.62 with peak bin 8 refines to 7.62 (negative offset)."""
    x = torch.arange(36, dtype=torch.float64)
    h = 3.0 - 0.5 * (x - 7.62) ** 2
    out = refine_peaks(h[None], torch.tensor([[8]]), circular=True)
    assert float(out[0, 0]) == pytest.approx(7.62, abs=1e-6)


def test_refine_peaks_wraps_circularly_across_bin_zero():
    """A circular parabola with vertex at −0.3 ≡ 35.7 refines from bin 0 (neighbour bin 35) to 35.7."""
    x = torch.arange(36, dtype=torch.float64)
    dist = torch.remainder(x - 35.7 + 18.0, 36.0) - 18.0
    h = -(dist**2)
    assert int(h.argmax()) == 0
    out = refine_peaks(h[None], torch.tensor([[0]]), circular=True)
    assert float(out[0, 0]) == pytest.approx(35.7, abs=1e-6)
    # and a vertex at 35.2 from peak bin 35 wraps the right neighbour to bin 0
    dist = torch.remainder(x - 35.2 + 18.0, 36.0) - 18.0
    out = refine_peaks((-(dist**2))[None], torch.tensor([[35]]), circular=True)
    assert float(out[0, 0]) == pytest.approx(35.2, abs=1e-6)


def test_refine_peaks_linear_edges_are_not_refined():
    """For a linear histogram, peaks on the first or last bin stay at the bin."""
    x = torch.arange(13, dtype=torch.float64)
    h = torch.stack([-((x + 0.3) ** 2), -((x - 12.2) ** 2)])
    out = refine_peaks(h, torch.tensor([[0], [12]]), circular=False)
    assert out[:, 0].tolist() == [0.0, 12.0]


def test_refine_peaks_offset_is_clamped_to_half_bin():
    """A bin that is not a maximum refines at most half a bin away."""
    h = torch.tensor([[0.0, 1.0, 2.0, 3.0, 10.0]], dtype=torch.float64)
    out = refine_peaks(h, torch.tensor([[2]]), circular=False)
    assert 1.5 <= float(out[0, 0]) <= 2.5


def _multi_peak():
    h = torch.zeros(1, 36, dtype=torch.float64)
    h[0, 3], h[0, 10], h[0, 11], h[0, 20] = 5.0, 9.0, 8.9, 7.0  # bin 11 is a shoulder, not a peak
    return h


def test_top_peaks_returns_distinct_local_maxima_strongest_first():
    """top_peaks skips shoulders of a mode: local maxima 10, 20, 3 in decreasing height."""
    assert top_peaks(_multi_peak(), 3, circular=True)[0].tolist() == [10, 20, 3]
    assert top_peaks(_multi_peak(), 3, circular=False)[0].tolist() == [10, 20, 3]
    # plain top-k would have returned the shoulder
    assert torch.topk(_multi_peak(), 3, dim=1).indices[0].tolist() == [10, 11, 20]


def test_top_peaks_fills_with_highest_bins_when_too_few_maxima():
    """With fewer local maxima than k, the highest remaining bins follow the maxima."""
    got = top_peaks(_multi_peak(), 5, circular=True)[0].tolist()
    assert got[:3] == [10, 20, 3]
    assert got[3] == 11  # highest non-peak bin


def test_top_peaks_circular_peak_at_bin_zero():
    """A mode at bin 0 whose lower neighbour is bin 35 counts as a peak only circularly."""
    h = torch.zeros(1, 36)
    h[0, 0], h[0, 35], h[0, 1] = 6.0, 5.0, 4.0
    h[0, 18] = 3.0
    assert top_peaks(h, 2, circular=True)[0].tolist() == [0, 18]
    h2 = torch.zeros(1, 13)
    h2[0, 0], h2[0, 1], h2[0, 6] = 6.0, 2.0, 3.0  # linear: bin 0 beats its only neighbour
    assert top_peaks(h2, 2, circular=False)[0].tolist() == [0, 6]


def test_top_peaks_validates_k():
    """k outside [1, B] raises."""
    with pytest.raises(ValueError):
        top_peaks(torch.rand(1, 13), 0, circular=False)
    with pytest.raises(ValueError):
        top_peaks(torch.rand(1, 13), 14, circular=False)


def test_decode_without_refinement_is_argmax():
    """decode(refine=False, k=1) returns the argmax bin as float."""
    h = torch.rand(8, 36, generator=torch.Generator().manual_seed(3))
    out = decode(h, circular=True, k=1, refine=False)
    assert out.shape == (8, 1)
    assert out.dtype == h.dtype
    torch.testing.assert_close(out[:, 0], h.argmax(1).to(h.dtype))


def test_decode_refines_each_of_k_modes():
    """decode(k=2) returns the refined centres of the two strongest modes, strongest first: exact for
    Gaussian-shaped peaks, however sharp (a parabola through the probabilities is not)."""
    x = torch.arange(36, dtype=torch.float64)
    for width in (1.0, 0.5):  # std in bins; at 0.5 the peak bin holds most of the mass
        h = torch.exp(-0.5 * ((x - 9.3) / width) ** 2) + 0.6 * torch.exp(-0.5 * ((x - 25.8) / width) ** 2)
        h = (h / h.sum())[None]
        out = decode(h, circular=True, k=2, refine=True)
        assert out.shape == (1, 2)
        assert out[0].tolist() == pytest.approx([9.3, 25.8], abs=1e-6)
        assert decode(h, circular=True, k=2, refine=False)[0].tolist() == [9.0, 26.0]
        plain = refine_peaks(h, torch.tensor([[9]]), circular=True)[0, 0]
        assert abs(float(plain) - 9.3) > 0.04  # the biased fit this decoder avoids
    # a histogram with empty bins still decodes (log of 0 is clamped, not -inf)
    h = torch.zeros(1, 36, dtype=torch.float64)
    h[0, 4] = 1.0
    assert decode(h, circular=True)[0, 0].item() == pytest.approx(4.0)


def test_refined_candidates_are_distinct_when_a_bin_fills_the_list():
    """One mode over bins 31-32: k = 2 fills with bin 31, the peak's neighbour. Refined, it slid half a bin
    to 31.5 beside the peak's 31.5 (two copies of one mode); a filler keeps its bin centre."""
    h = torch.full((1, 36), 1e-6, dtype=torch.float64)
    h[0, 31], h[0, 32] = 0.485, 0.514
    h = h / h.sum()
    got = decode(h, circular=True, k=2)[0].tolist()
    assert got[1] == 31.0 and abs(got[0] - got[1]) > 0.4
    assert decode(h, circular=True, k=1)[0, 0] == pytest.approx(got[0])  # the mode is refined as before
