"""Histogram alignment losses: minima at the true shift, gradients, and the two documented traps."""

from __future__ import annotations

import math

import pytest
import torch

from patchpose.losses import EPS, LossConfig, alignment_loss, entropy, pose_loss

X_ORI = torch.arange(36, dtype=torch.float64)
X_SC = torch.arange(13, dtype=torch.float64)


def _ori_logits(centre: float, width: float = 1.5) -> torch.Tensor:
    """Peaked circular logits (von-Mises-like) centred at a continuous bin."""
    dist = torch.remainder(X_ORI - centre + 18.0, 36.0) - 18.0
    return (-(dist**2) / (2 * width**2))[None]


def _scale_logits(centre: float, width: float = 1.0) -> torch.Tensor:
    return (-((X_SC - centre) ** 2) / (2 * width**2))[None]


def _loss(za, zb, d, circular, mode):
    return float(
        alignment_loss(za, zb, torch.tensor([float(d)], dtype=torch.float64), circular, mode=mode)[0]
    )


# ----------------------------------------------------------------------------- minima at the true shift


@pytest.mark.parametrize("mode", ["prob", "logits"])
@pytest.mark.parametrize("d", [3, 17, 30])
def test_orientation_loss_minimal_at_true_integer_shift(mode, d):
    """With h_b = h_a rolled d bins up, the loss over all candidate shifts s is minimal at s = d."""
    za = _ori_logits(5.0) + 0.3 * torch.randn(
        1, 36, dtype=torch.float64, generator=torch.Generator().manual_seed(d)
    )
    zb = torch.roll(za, d, dims=1)  # towards higher indices
    losses = [_loss(za, zb, s, True, mode) for s in range(36)]
    assert min(range(36), key=losses.__getitem__) == d
    assert sorted(losses)[1] > losses[d] + 1e-3  # strict minimum


@pytest.mark.parametrize("d", [-4, -1, 2, 5])
def test_scale_all_loss_minimal_at_true_integer_shift(d):
    """Scale mode "all": with b's peak d bins above a's, the loss over s ∈ [−8, 8] is minimal at s = d."""
    za, zb = _scale_logits(6.0), _scale_logits(6.0 + d)
    shifts = list(range(-8, 9))
    losses = [_loss(za, zb, s, False, "all") for s in shifts]
    assert shifts[min(range(len(shifts)), key=losses.__getitem__)] == d


@pytest.mark.parametrize("d", [2.4, -1.7, 0.5])
def test_scale_fractional_shift_beats_neighbouring_integers(d):
    """Scale "all": with b's peak a fractional d bins higher, loss(d) < loss(d ± 1)."""
    za, zb = _scale_logits(6.0), _scale_logits(6.0 + d)
    here = _loss(za, zb, d, False, "all")
    assert here < _loss(za, zb, d - 1.0, False, "all")
    assert here < _loss(za, zb, d + 1.0, False, "all")
    assert here < _loss(za, zb, d + 0.5, False, "all")
    assert here < _loss(za, zb, d - 0.5, False, "all")


@pytest.mark.parametrize("d", [2.4, 33.7, 17.5])
def test_orientation_fractional_shift_beats_neighbouring_integers(d):
    """Orientation "prob": loss at the fractional truth d is below loss at d ± 1."""
    za, zb = _ori_logits(10.0), _ori_logits(10.0 + d)
    here = _loss(za, zb, d, True, "prob")
    assert here < _loss(za, zb, d - 1.0, True, "prob")
    assert here < _loss(za, zb, d + 1.0, True, "prob")


def test_symmetric_loss_is_symmetric_in_a_and_b():
    """loss(a, b, d) == loss(b, a, −d) for every mode."""
    g = torch.Generator().manual_seed(0)
    za, zb = (
        torch.randn(4, 13, dtype=torch.float64, generator=g),
        torch.randn(4, 13, dtype=torch.float64, generator=g),
    )
    d = torch.tensor([1.3, -2.0, 0.0, 4.6], dtype=torch.float64)
    for mode in ("all", "shared"):
        torch.testing.assert_close(
            alignment_loss(za, zb, d, False, mode=mode), alignment_loss(zb, za, -d, False, mode=mode)
        )
    za, zb = (
        torch.randn(4, 36, dtype=torch.float64, generator=g),
        torch.randn(4, 36, dtype=torch.float64, generator=g),
    )
    for mode in ("prob", "logits"):
        torch.testing.assert_close(
            alignment_loss(za, zb, d, True, mode=mode), alignment_loss(zb, za, -d, True, mode=mode)
        )


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize(
    "circular, mode, bins",
    [
        (False, "all", 13),
        (False, "shared", 13),
        (False, "official", 13),
        (True, "prob", 36),
        (True, "logits", 36),
    ],
)
@pytest.mark.parametrize("scale", [1.0, 60.0])
def test_gradients_are_finite_for_every_mode(circular, mode, bins, scale):
    """Backward gives finite, non-zero gradients for all modes, also for saturated logits."""
    g = torch.Generator().manual_seed(1)
    za = (scale * torch.randn(6, bins, generator=g)).requires_grad_()
    zb = (scale * torch.randn(6, bins, generator=g)).requires_grad_()
    d = torch.tensor([0.0, 1.0, -2.5, 3.3, 7.9, -12.0])
    loss = alignment_loss(za, zb, d, circular, temperature=2.0, mode=mode)
    assert loss.shape == (6,)
    assert bool(torch.isfinite(loss).all())
    loss.sum().backward()
    for z in (za, zb):
        assert bool(torch.isfinite(z.grad).all())
        assert float(z.grad.abs().sum()) > 0


def test_unknown_mode_raises():
    """An unknown alignment mode is an error."""
    with pytest.raises(ValueError):
        alignment_loss(torch.zeros(1, 13), torch.zeros(1, 13), torch.zeros(1), False, mode="bogus")


# ----------------------------------------------------------------------------- the orientation trap


@pytest.mark.parametrize("mode", ["prob", "logits"])
@pytest.mark.parametrize("d", [0.0, 1.0, 7.5, 20.3, -4.0])
def test_uniform_orientation_pair_loss_is_2_ln_36_for_any_shift(mode, d):
    """Uniform histograms give 2·ln 36 (up to the ε in the log) whatever d is: the shift is invisible."""
    z = torch.zeros(1, 36, dtype=torch.float64)
    got = _loss(z, z, d, True, mode)
    assert got == pytest.approx(-2.0 * math.log(1.0 / 36 + EPS), abs=1e-9)
    assert got == pytest.approx(2.0 * math.log(36.0), abs=1e-3)


def test_paper_orientation_loss_has_zero_gradient_at_uniform_logits():
    """pose_loss with ori_entropy = ori_batch_entropy = 0 is stationary at uniform logits (the trap)."""
    za = torch.zeros(5, 36, dtype=torch.float64, requires_grad=True)
    zb = torch.zeros(5, 36, dtype=torch.float64, requires_grad=True)
    d = torch.tensor([1.0, 4.5, 12.0, 30.2, 0.0], dtype=torch.float64)
    cfg = LossConfig(ori_entropy=0.0, ori_batch_entropy=0.0)
    out = pose_loss({"ori_logits": za}, {"ori_logits": zb}, d, d, cfg)
    assert set(out) >= {"total", "orientation"}
    assert "scale" not in out
    out["total"].backward()
    assert float(za.grad.abs().max()) < 1e-9
    assert float(zb.grad.abs().max()) < 1e-9


def test_uniform_is_not_a_minimum_for_aligned_perturbations():
    """Away from uniform, a pair consistent with the shift has a lower loss: uniform is a saddle, not the goal."""
    d = torch.tensor([3.0], dtype=torch.float64)
    z = torch.zeros(1, 36, dtype=torch.float64)
    za = _ori_logits(8.0, width=3.0)
    zb = torch.roll(za, 3, dims=1)
    assert float(alignment_loss(za, zb, d, True)[0]) < float(alignment_loss(z, z, d, True)[0]) - 0.5


def test_pose_loss_reports_both_heads_and_sums_them():
    """pose_loss sums the scale and orientation terms (with the regularisers); ori_reg is logged detached."""
    g = torch.Generator().manual_seed(2)
    a = {"scale_logits": torch.randn(3, 13, generator=g), "ori_logits": torch.randn(3, 36, generator=g)}
    b = {"scale_logits": torch.randn(3, 13, generator=g), "ori_logits": torch.randn(3, 36, generator=g)}
    ds, do = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([3.0, 10.5, 35.0])
    cfg = LossConfig(ori_entropy=0.0, ori_batch_entropy=0.0)
    out = pose_loss(a, b, ds, do, cfg)
    torch.testing.assert_close(out["total"], out["scale"] + out["orientation"])
    assert float(out["ori_reg"]) == 0.0
    cfg = LossConfig(ori_entropy=1.0, ori_batch_entropy=1.0)
    out = pose_loss(a, b, ds, do, cfg)
    pa, pb = a["ori_logits"].softmax(1), b["ori_logits"].softmax(1)
    reg = 0.5 * (entropy(pa) + entropy(pb)).mean() - entropy(pb.mean(0))
    torch.testing.assert_close(out["ori_reg"], reg)
    torch.testing.assert_close(out["total"], out["scale"] + out["orientation"] + reg)


# ----------------------------------------------------------------------------- the "shared" scale trap


def test_shared_scale_loss_cannot_see_mass_outside_overlap():
    """Mode "shared" ignores mass outside B: a cheat (a at bin 12, b at bin 0, d=+3) scores ~0, "all" does not."""
    d = 3.0
    cheat_a, cheat_b = _scale_logits(12.0, 0.6), _scale_logits(0.0, 0.6)
    honest_a, honest_b = _scale_logits(4.0, 0.6), _scale_logits(7.0, 0.6)
    shared_cheat = _loss(cheat_a, cheat_b, d, False, "shared")
    all_cheat = _loss(cheat_a, cheat_b, d, False, "all")
    assert shared_cheat < 1e-3  # the cheat is invisible to "shared"
    assert shared_cheat < 0.01 * all_cheat
    assert all_cheat > 10.0  # "all" charges −log ε for mass where the partner cannot be
    # the cheat beats the honest answer under "shared" and loses under "all"
    assert shared_cheat < _loss(honest_a, honest_b, d, False, "shared")
    assert all_cheat > _loss(honest_a, honest_b, d, False, "all")


def test_shared_equals_all_when_mass_stays_inside_overlap():
    """When both histograms put (almost) no mass outside B, "shared" and "all" agree."""
    za, zb = _scale_logits(4.0, 0.5), _scale_logits(6.0, 0.5)
    assert _loss(za, zb, 2.0, False, "shared") == pytest.approx(_loss(za, zb, 2.0, False, "all"), abs=1e-6)


# ----------------------------------------------------------------------------- equivariance


@pytest.mark.parametrize("mode", ["prob", "logits"])
@pytest.mark.parametrize("k", [1, 9, 35])
def test_orientation_loss_is_equivariant_to_common_rotation(mode, k):
    """loss(za, zb, d) == loss(roll(za, k), roll(zb, k), d): rotating both patches changes nothing."""
    g = torch.Generator().manual_seed(k)
    za, zb = (
        torch.randn(4, 36, dtype=torch.float64, generator=g),
        torch.randn(4, 36, dtype=torch.float64, generator=g),
    )
    d = torch.tensor([0.0, 2.5, 13.0, 31.7], dtype=torch.float64)
    base = alignment_loss(za, zb, d, True, mode=mode)
    rolled = alignment_loss(torch.roll(za, k, 1), torch.roll(zb, k, 1), d, True, mode=mode)
    torch.testing.assert_close(rolled, base, rtol=1e-10, atol=1e-10)


def test_orientation_loss_periodic_in_d():
    """d and d + 36 give the same orientation loss."""
    g = torch.Generator().manual_seed(4)
    za, zb = (
        torch.randn(2, 36, dtype=torch.float64, generator=g),
        torch.randn(2, 36, dtype=torch.float64, generator=g),
    )
    d = torch.tensor([2.3, -5.0], dtype=torch.float64)
    torch.testing.assert_close(alignment_loss(za, zb, d + 36.0, True), alignment_loss(za, zb, d, True))


def test_temperature_divides_logits():
    """temperature T is the same as dividing the logits by T."""
    g = torch.Generator().manual_seed(5)
    za, zb = (
        torch.randn(3, 13, dtype=torch.float64, generator=g),
        torch.randn(3, 13, dtype=torch.float64, generator=g),
    )
    d = torch.tensor([1.0, 0.2, -2.6], dtype=torch.float64)
    torch.testing.assert_close(
        alignment_loss(za, zb, d, False, temperature=20.0), alignment_loss(za / 20.0, zb / 20.0, d, False)
    )


def test_distillation_loss_is_the_kl_divergence_from_the_teacher():
    """Σ over heads of mean KL(p_teacher ‖ p_student): 0 for the teacher's own logits (or any per-row
    offset of them), the hand-computed value otherwise, and no gradient into the teacher."""
    from patchpose.losses import distillation_loss

    zt = {"scale_logits": torch.tensor([[0.0, math.log(3.0)]]), "ori_logits": torch.zeros(1, 4)}
    same = {k: (v + 5.0).requires_grad_() for k, v in zt.items()}
    assert distillation_loss(same, zt).item() == pytest.approx(0.0, abs=1e-6)
    # teacher (1/4, 3/4) against a uniform student on the scale head; orientation equal
    zs = {"scale_logits": torch.zeros(1, 2, requires_grad=True), "ori_logits": torch.zeros(1, 4)}
    kl = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    loss = distillation_loss(zs, {k: v.clone().requires_grad_() for k, v in zt.items()})
    assert loss.item() == pytest.approx(kl, rel=1e-5)
    t = {k: v.clone().requires_grad_() for k, v in zt.items()}
    distillation_loss(zs, t).backward()
    assert zs["scale_logits"].grad.abs().sum() > 0 and t["scale_logits"].grad is None
    # the temperature divides both sides' logits
    half = distillation_loss(
        {"scale_logits": torch.zeros(1, 2)}, {"scale_logits": 2 * zt["scale_logits"]}, 2.0
    )
    assert half.item() == pytest.approx(kl, rel=1e-5)
    with pytest.raises(ValueError, match="teacher"):
        distillation_loss({"scale_logits": torch.zeros(1, 3)}, zt)
    with pytest.raises(ValueError, match="no histogram head"):
        distillation_loss({"ori_logits": torch.zeros(1, 4)}, {"scale_logits": torch.zeros(1, 2)})
