"""Level-3 style: a small residual network (a 7x7 stem with batch norm and max pooling, two
residual blocks with strided 3x3 convolutions and 1x1 shortcuts, global average pooling, a
linear head), batch norm in eval mode."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.down(x))


class Model(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(3, stride=2, padding=1))
        self.layer1 = Block(16, 32, 2)
        self.layer2 = Block(32, 64, 2)
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        x = F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return self.head(x)


batch_size = 4


def get_inputs():
    return [torch.randn(batch_size, 3, 64, 64)]


def get_init_inputs():
    return []
