"""Level-1 style loss: triplet margin loss (pairwise distances, a clamp, a mean)."""
import torch
import torch.nn as nn

batch_size = 16
dim = 37


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.loss_fn = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.0]
