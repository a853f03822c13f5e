"""Histogram heads: features → logits over pose bins."""

from __future__ import annotations

from torch import nn


def select_heads(have, heads=None) -> tuple[str, ...]:
    """The heads a read runs: all of ``have`` for None, else ``heads``, which must be a non-empty subset of them
    (``ValueError`` otherwise)."""
    want = tuple(have) if heads is None else tuple(heads)
    if not want or set(want) - set(have):
        raise ValueError(f"heads must be a non-empty subset of {list(have)}, got {list(want)}")
    return want


def make_head(
    in_dim: int, num_bins: int, kind: str = "linear", hidden: tuple[int, ...] = (512, 128, 64)
) -> nn.Module:
    """``"linear"``: one linear layer. ``"mlp"``: the paper's four-layer MLP (Linear–BN–ReLU ×3, then
    Linear to ``num_bins``; 512-512-128-64 in the official code)."""
    if kind == "linear":
        return nn.Linear(in_dim, num_bins)
    if kind == "mlp":
        layers, cin = [], in_dim
        for h in hidden:
            layers += [nn.Linear(cin, h), nn.BatchNorm1d(h), nn.ReLU(inplace=True)]
            cin = h
        layers.append(nn.Linear(cin, num_bins))
        return nn.Sequential(*layers)
    raise ValueError(f"unknown head kind {kind!r} (use 'linear' or 'mlp')")
