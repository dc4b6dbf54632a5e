"""MLPHead's ``weight_decay="auto"`` cross-validation as one batched training.

The search fits one head per (decay, fold), each from the same initial weights,
the same dropout draws and for the same epochs. On a GPU each of those small
full-batch fits costs its kernel launches, not its arithmetic, so the 45 fits
took longer than on the CPU. Here the candidates train together: stacked
weights (one batched matrix product per layer; a fold's decays share its input
rows), each candidate's loss the mean cross-entropy of its fold's training rows,
Adam with each candidate's L2 penalty, then each scored by its accuracy on its
fold's held-out rows, as ``GridSearchCV`` scores the sequential fits.
"""

import numpy as np
import torch

from .._torch import (
    Adam,
    build_module,
    class_softmax,
    resolve_device,
    stream_seed,
    torch_generator,
    train,
)
from ..model_selection._validation import validation_split
from ..utils._random import training_seed

__all__ = ["batched_decay_scores"]

# Above this many bytes (the folds' training rows, their held-out rows in float64, four
# copies of the stacked weights: the weights, their gradients and Adam's two moments, and
# the hidden activations) the candidates fit in turn.
_BATCH_BYTES = 1 << 28
# A hidden layer wider than this fits in turn on the CPU: there the batched products
# (and their copies) of wide layers were slower than the 45 fits (499 rows, one thread:
# 64 units 0.7 s against 1.0 s, 128 units 1.5 s against 1.4 s, 512 units 12 s against 5 s)
_CPU_WIDEST = 64


def batched_decay_scores(est, X, y, splits, decays):
    """Mean held-out accuracy of each decay, or ``None`` where the fits cannot be batched.

    Parameters
    ----------
    est : MLPHead
        The candidates' estimator (its ``random_state`` seeds every candidate alike).
    X : ndarray of shape (n_rows, n_features), float32
    y : array-like of shape (n_rows,)
    splits : list of (train, test) index arrays
    decays : sequence of float

    Returns
    -------
    ndarray of shape (len(decays),) or None
        What ``GridSearchCV`` reports as ``mean_test_score``; ``None``: the fits
        are not full-batch fits without early stopping (fit them in turn).
    """
    classes, y_enc = np.unique(np.asarray(y), return_inverse=True)
    sizes = [len(tr) for tr, _ in splits]
    seed = training_seed(est.random_state)
    if est.batch_size is not None and est.batch_size < max(sizes):
        return None   # mini-batches: a permutation per fit and epoch
    if any(validation_split(X[tr], y_enc[tr], validation=None,
                            early_stopping=est.early_stopping,
                            validation_fraction=est.validation_fraction, seed=seed,
                            owner=est)[1] is not None for tr, _ in splits):
        return None   # each fit would stop on its own epoch
    n_folds, n_decays = len(splits), len(decays)
    d, c = X.shape[1], len(classes)
    widths = [d, *est._hidden_sizes(), c]
    n_params = sum((a + 1) * b for a, b in zip(widths[:-1], widths[1:], strict=True))
    m, t = max(sizes), max(len(te) for _, te in splits)
    hidden = sum(widths[1:-1])
    # the fold data, four copies of the stacked weights and about four of the hidden
    # activations (live through the backward pass), float32
    if n_folds * (4 * m * d + 8 * t * d + 16 * n_decays * (n_params + m * hidden)) \
            > _BATCH_BYTES:
        return None
    device = resolve_device(est.device)
    if device.type == "cpu" and max(widths[1:-1], default=0) > _CPU_WIDEST:
        return None   # wide layers: on the CPU the batched products lose to the fits in turn

    # Each fold's rows normalised with its training rows' statistics, as a fit does
    # (zero rows pad the folds to one length; they weigh nothing)
    X_tr = np.zeros((n_folds, m, d), dtype=np.float32)
    cpu = torch.device("cpu")   # (explicit: whatever torch's default device)
    X_te = torch.zeros((n_folds, t, d), dtype=torch.float64, device=cpu)
    W_tr = np.zeros((n_folds, m, c))   # minus one-hot / fold size: the mean cross-entropy
    y_te = torch.full((n_folds, t), -1, device=cpu)
    n_test = []
    for k, (tr, te) in enumerate(splits):
        est._prepare(X[tr], cpu)   # est._stats: the fold's, as its fit's
        X_tr[k, :len(tr)] = est._normalize_rows(X[tr])
        W_tr[k, np.arange(len(tr)), y_enc[tr]] = -1.0 / len(tr)
        # held-out rows as the fitted head predicts them: float64, float32 statistics
        with torch.no_grad(), cpu:
            X_te[k, :len(te)] = est._input_norm().double()(
                torch.as_tensor(X[te], device=cpu).double())
        y_te[k, :len(te)] = torch.as_tensor(y_enc[te], device=cpu)
        n_test.append(len(te))

    # The sequential fits' initial weights (the same seed for every candidate), stacked
    module = build_module(lambda: est._build_module(d, c),
                          torch_generator(stream_seed(seed, "init")))
    del est._stats
    linears = [layer for layer in module if isinstance(layer, torch.nn.Linear)]
    acts = [module[i + 1] for i, layer in enumerate(module)
            if isinstance(layer, torch.nn.Linear) and i + 1 < len(module)]
    wd = torch.as_tensor(decays, dtype=torch.float32, device=cpu)
    params, penalties = [], []
    for i, lin in enumerate(linears):
        w, b = lin.weight.detach().t(), lin.bias.detach()
        if i == 0:   # (folds, in, decays * out): a fold's decays share its rows
            params += [w.repeat(1, n_decays).expand(n_folds, -1, -1),
                       b.repeat(n_decays).expand(n_folds, 1, -1)]
            per = wd.repeat_interleave(w.shape[1]).view(1, 1, -1)
            penalties += [per, per]
        else:        # (folds * decays, in, out), candidate f * decays + j
            params += [w.expand(n_folds * n_decays, -1, -1), b.expand(n_folds * n_decays, 1, -1)]
            per = wd.repeat(n_folds).view(-1, 1, 1)
            penalties += [per, per]
    params = [p.contiguous().to(device).requires_grad_() for p in params]
    penalties = [p.to(device) for p in penalties]
    X_tr = torch.as_tensor(X_tr, device=device)
    W_tr = torch.as_tensor(W_tr, dtype=torch.float32, device=device)
    # the targets' layout: (folds, rows, decays, classes) for a linear head, else
    # (folds, decays, rows, classes)
    W_tr = W_tr.unsqueeze(2) if len(linears) == 1 else W_tr.unsqueeze(1)

    # Dropout as each fit draws it: a generator per fold seeded as the fit's own
    # (folds of one size draw the same masks: one draw serves them all)
    p_drop = est.dropout if len(linears) > 1 else 0
    gens = [torch_generator(stream_seed(seed, "dropout"), device)
            for _ in range(1 if len(set(sizes)) == 1 else n_folds)]
    masks = [torch.zeros((len(gens), m, h), device=device) for h in widths[1:-1]] \
        if p_drop else []

    def forward(x, ps, drop):
        drop = drop and bool(masks)
        h = torch.baddbmm(ps[1], x, ps[0])
        if len(linears) == 1:
            return h.view(n_folds, -1, n_decays, c)
        h = acts[0](h.view(n_folds, -1, n_decays, widths[1]))
        if drop:
            h = h * masks[0].unsqueeze(2)
        h = h.transpose(1, 2).reshape(n_folds * n_decays, -1, widths[1])
        for i in range(1, len(linears)):
            h = torch.baddbmm(ps[2 * i + 1], h, ps[2 * i])
            if i + 1 < len(linears):
                h = acts[i](h)
                if drop:
                    h = (h.view(n_folds, n_decays, -1, widths[i + 1])
                         * masks[i].unsqueeze(1)).view(h.shape)
        return h.view(n_folds, n_decays, -1, c)

    opt = Adam(params, lr=est.lr)

    def step(epoch):
        keep = 1.0 - p_drop
        for buf in masks:   # as skldp's dropout: uniform draws below the keep probability
            for k, g in enumerate(gens):
                torch.rand((sizes[k], buf.shape[2]), generator=g, device=buf.device,
                           out=buf[k, :sizes[k]])
            buf.lt_(keep).div_(keep)
        opt.zero_grad()
        logits = forward(X_tr, params, True)
        loss = (class_softmax(logits.reshape(-1, c), log=True).view(logits.shape) * W_tr).sum()
        loss.backward()
        # Adam's L2 penalty (weight_decay * param added to the gradient), per candidate
        for p, w in zip(params, penalties, strict=True):   # (a few tensors: a plain loop)
            p.grad.addcmul_(p, w)
        opt.step()

    train(step, est.epochs)
    with torch.no_grad():
        logits = forward(X_te.to(device), [p.detach().double() for p in params], False)
    pred = logits.argmax(-1).cpu()
    pred = pred if len(linears) == 1 else pred.transpose(1, 2)   # (folds, rows, decays)
    correct = (pred == y_te.unsqueeze(2)).sum(1).numpy()          # (folds, decays)
    acc = correct / np.asarray(n_test, dtype=np.float64)[:, None]
    return np.average(acc.T, axis=1)
