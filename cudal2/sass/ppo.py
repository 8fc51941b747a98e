"""PPO for the assembly game: a small policy over the instruction rows, trained on the measured
gains while it plays (CuAsmRL's agent, in plain torch and at the size one kernel's game affords).

    result = ppo(game, Budget(seconds=600))   # an AgentResult, as greedy and anneal return

Guarantees:
- the policy scores every (instruction, up/down) pair from that instruction's row of
  `Game.features()` (a shared two-layer MLP, so one policy fits any kernel length); illegal moves
  get probability 0 through `Game.mask()`, so every state it visits passed the checker, and the
  schedule it returns is one of them (or the original when nothing measured better);
- an episode starts from ptxas's order and takes up to `episode_len` moves; the reward of a move
  is the change in measured gain (`Game.step`), -1 ending the episode when the GPU refuses the
  schedule; every `episodes_per_update` episodes, PPO's clipped objective (GAE advantages,
  value loss, an entropy bonus) updates the policy for `epochs` passes;
- the `finalists` best distinct states measured are each measured once more, fresh, at the end,
  and the agent ends in the one whose smaller number is largest, as the other agents do
  (`agents._finish`): a gain counts only when it reproduces;
- deterministic given `seed` and a deterministic `measure` (CPU torch, seeded sampling).

Does not:
- carry a policy from one kernel to the next (each game trains from scratch), or pretrain;
- run the policy on the GPU: the network is tiny and the measurements dominate the cost.
"""

from __future__ import annotations

import random

import numpy as np

from cudal2.sass.agents import AgentResult, Budget, _finish, _keep_best
from cudal2.sass.game import Game


def _policy(n_features: int, hidden: int):
    import torch

    class Policy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.Tanh(),
                                            torch.nn.Linear(hidden, hidden), torch.nn.Tanh())
            self.moves = torch.nn.Linear(hidden, 2)    # per row: up, down (the game's 2 * pos + down)
            self.value = torch.nn.Linear(hidden, 1)

        def forward(self, obs, mask):
            """obs (B, n, f), mask (B, 2n) -> masked logits (B, 2n), values (B,)."""
            h = self.body(obs)
            logits = self.moves(h).flatten(1).masked_fill(~mask, -1e9)
            return logits, self.value(h.mean(1)).squeeze(-1)

    return Policy()


def ppo(game: Game, budget: Budget, episode_len: int = 8, episodes_per_update: int = 4, epochs: int = 4,
        lr: float = 3e-3, clip: float = 0.2, gamma: float = 0.99, lam: float = 0.95, entropy: float = 0.01,
        hidden: int = 64, reward_scale: float = 100.0, min_gain: float = 0.01, seed: int = 0,
        finalists: int = 3, on_update=None) -> AgentResult:
    """`reward_scale`: gains are fractions (0.01 = 1%); the policy sees them times this.
    `on_update(k, mean_reward)`, if given, hears the mean (unscaled) reward per move of each
    batch before update k: a learning curve."""
    import torch

    torch.manual_seed(seed)
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    since = budget.start(game)
    net = _policy(game.features().shape[1], hidden)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    top: list[tuple[float, dict]] = []      # the best states measured, (gain, orders), best first
    trace = [(0, 0.0)]
    stale = 0    # batches in a row that measured nothing new (every state already cached)
    updates = 0

    while budget.spent(game, since) < 1.0 and stale < 50:
        batch = {"obs": [], "mask": [], "act": [], "logp": [], "val": [], "rew": [], "done": []}
        measured = game.stats.measured
        for _ in range(episodes_per_update):
            game.reset()
            obs = game.features()
            for t in range(episode_len):
                mask = game.mask()
                if not mask.any() or budget.spent(game, since) >= 1.0:
                    break
                with torch.no_grad():
                    logits, v = net(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])
                    dist = torch.distributions.Categorical(logits=logits[0])
                    a = int(torch.multinomial(dist.probs, 1, generator=gen))
                nxt, r, done, info = game.step(a)
                batch["obs"].append(obs)
                batch["mask"].append(mask)
                batch["act"].append(a)
                batch["logp"].append(float(dist.log_prob(torch.tensor(a))))
                batch["val"].append(float(v[0]))
                batch["rew"].append(r * (1.0 if info.get("gpu_failed") else reward_scale))
                last = done or t == episode_len - 1
                batch["done"].append(last)
                if info.get("gain") is not None:
                    top = _keep_best(top, info["gain"], game, finalists, trace)
                obs = nxt
                if done:
                    break
            if batch["done"]:
                batch["done"][-1] = True    # an episode cut by the budget or an empty mask ends here
        stale = stale + 1 if game.stats.measured == measured else 0
        if len(batch["act"]) < 2:
            continue
        if on_update is not None:
            on_update(updates, sum(batch["rew"]) / len(batch["rew"]) / reward_scale)
        updates += 1
        _update(net, opt, batch, epochs, clip, gamma, lam, entropy, rng)
    game.reset()
    return _finish("ppo", game, top, min_gain, since, trace)


def _update(net, opt, batch: dict, epochs: int, clip: float, gamma: float, lam: float, entropy: float,
            rng: random.Random) -> None:
    """PPO's clipped surrogate over one batch of transitions (every episode ends inside it, so
    the bootstrap value past an episode's end is 0)."""
    import torch

    rew, val, done = batch["rew"], batch["val"], batch["done"]
    adv = [0.0] * len(rew)
    running = 0.0
    for k in reversed(range(len(rew))):
        next_v = 0.0 if done[k] else val[k + 1]
        delta = rew[k] + gamma * next_v - val[k]
        running = delta + gamma * lam * (0.0 if done[k] else running)
        adv[k] = running
    ret = torch.tensor([a + v for a, v in zip(adv, val)], dtype=torch.float32)
    adv_t = torch.tensor(adv, dtype=torch.float32)
    if len(adv) > 1 and float(adv_t.std()) > 1e-8:
        adv_t = (adv_t - adv_t.mean()) / adv_t.std()
    obs = torch.from_numpy(np.stack(batch["obs"]))
    mask = torch.from_numpy(np.stack(batch["mask"]))
    act = torch.tensor(batch["act"])
    logp_old = torch.tensor(batch["logp"])
    idx = list(range(len(act)))
    for _ in range(epochs):
        rng.shuffle(idx)
        for s in range(0, len(idx), 16):
            j = torch.tensor(idx[s:s + 16])
            logits, v = net(obs[j], mask[j])
            dist = torch.distributions.Categorical(logits=logits)
            ratio = torch.exp(dist.log_prob(act[j]) - logp_old[j])
            surrogate = torch.min(ratio * adv_t[j], torch.clamp(ratio, 1 - clip, 1 + clip) * adv_t[j])
            loss = -surrogate.mean() + 0.5 * ((v - ret[j]) ** 2).mean() - entropy * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
