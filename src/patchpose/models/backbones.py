"""Convolutional trunks. Each maps ``(N, C, PS, PS)`` to ``(N, D)`` features; written here because
torchvision cannot be installed beside our torch build."""

from __future__ import annotations

import torch
from torch import nn


def conv_bn_relu(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class SmallCNN(nn.Module):
    """Plain stack of 3×3 conv–BN–ReLU blocks, flattened spatial map, one FC layer.

    The spatial layout is kept (flatten, not global pooling): where the structure sits relative to the
    keypoint is what orientation is about.
    """

    def __init__(
        self,
        in_channels: int,
        patch_size: int = 32,
        channels: tuple[int, ...] = (32, 32, 64, 64, 128, 128),
        strides: tuple[int, ...] = (1, 2, 1, 2, 1, 2),
        embed_dim: int = 256,
    ) -> None:
        super().__init__()
        if len(channels) != len(strides):
            raise ValueError("channels and strides must have the same length")
        layers, cin, size = [], in_channels, patch_size
        for cout, s in zip(channels, strides):
            layers.append(conv_bn_relu(cin, cout, s))
            cin, size = cout, (size + s - 1) // s
        self.features = nn.Sequential(*layers)
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(cin * size * size, embed_dim), nn.ReLU(inplace=True))
        self.out_dim = embed_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.down is None else self.down(x)
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + idt)


class ResNet18(nn.Module):
    """ResNet-18 as in the paper's official code: ImageNet stem (7×7/2 conv + max-pool) kept for 32×32
    inputs, layers [2, 2, 2, 2] of widths 64–512, global **max** pooling, random initialisation."""

    def __init__(self, in_channels: int, width: int = 64) -> None:
        super().__init__()
        w = [width, 2 * width, 4 * width, 8 * width]
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, w[0], 7, 2, 3, bias=False),
            nn.BatchNorm2d(w[0]),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        blocks, cin = [], w[0]
        for i, cout in enumerate(w):
            stride = 1 if i == 0 else 2
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveMaxPool2d(1)
        self.out_dim = cin
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.layers(self.stem(x))).flatten(1)
