"""skldp's dropout: an inverted-dropout mask drawn from the thread's local generator."""

import numpy as np
import pytest
import torch

from skldp._torch import dropout, dropout_generator


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_mask_rate_scale_and_gradient(p):
    x = torch.full((400, 250), 3.0, requires_grad=True)
    with dropout_generator(torch.Generator().manual_seed(0)):
        out = dropout(x, p)
    kept = out.detach() != 0
    n = kept.numel()
    # Binomial(n, 1 - p): the kept share is within 5 standard deviations of 1 - p.
    assert abs(kept.float().mean().item() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
    assert torch.allclose(out.detach()[kept], torch.tensor(3.0 / (1 - p)))
    out.sum().backward()
    assert torch.equal(x.grad != 0, kept)
    assert torch.allclose(x.grad[kept], torch.tensor(1 / (1 - p)))


def test_draws_come_from_the_installed_generator():
    x = torch.ones(50, 40)
    state = torch.random.get_rng_state()

    def draw(seed):
        with dropout_generator(torch.Generator().manual_seed(seed)):
            return dropout(x, 0.5)

    assert torch.equal(draw(1), draw(1))
    assert not torch.equal(draw(1), draw(2))
    assert torch.equal(torch.random.get_rng_state(), state)  # global generator untouched


def test_identity_when_not_training_or_p_zero():
    x = torch.randn(5, 3)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
