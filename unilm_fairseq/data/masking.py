"""BERT's masking rates, shared by every masked objective of this package."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MaskingConfig:
    """How many tokens are masked and what their inputs become.

    The values are BERT's (Devlin et al. 2019), which UniLM v1 (§2.4) and
    UniLMv2 (§4.1) state for pre-training: 15% of the tokens are masked; of
    those, 80% become the mask token, 10% a random token and 10% stay. PALM
    (§2.1) masks "following BERT's practice"; s2s-ft's masked fine-tuning
    (§2.2) corrupts targets as in masked LM pre-training.

    The class attributes are the defaults of the masking functions, the
    datasets and the task options (``field(default=MaskingConfig.mask_prob)``).
    """

    mask_prob: float = 0.15
    """share of the maskable tokens that are masked"""
    random_token_prob: float = 0.1
    """share of the masked inputs replaced by a random token"""
    leave_unmasked_prob: float = 0.1
    """share of the masked inputs left unchanged"""


def random_token_candidates(dictionary, mask_idx: int) -> np.ndarray:
    """``(V',)`` ids a random replacement is drawn from: every symbol from ``nspecial`` on but the special
    tokens (the mask, and any a one-token-per-line vocabulary lists after its words)."""
    specials = {mask_idx, dictionary.bos(), dictionary.pad(), dictionary.eos(), dictionary.unk()}
    specials.update(getattr(dictionary, "aliases", {}).values())
    candidates = np.array([i for i in range(dictionary.nspecial, len(dictionary)) if i not in specials])
    if len(candidates) == 0:
        raise ValueError(
            f"no token to draw random replacements from: the dictionary's {len(dictionary)} ids are all "
            f"special (nspecial {dictionary.nspecial}, mask {mask_idx})"
        )
    return candidates


def corrupt_masked(
    originals: np.ndarray,
    rng: np.random.Generator,
    mask_idx: int,
    random_candidates: np.ndarray,
    leave_unmasked_prob: float = MaskingConfig.leave_unmasked_prob,
    random_token_prob: float = MaskingConfig.random_token_prob,
) -> np.ndarray:
    """BERT's corruption of masked inputs: ``[M]``, a random token, or unchanged.

    Args:
        originals: ``(K,)`` token ids at the masked positions.
        random_candidates: ids a random replacement is drawn from (uniformly).
    Returns:
        ``(K,)`` input ids.
    """
    draw = rng.random(len(originals))
    inputs = np.full_like(originals, mask_idx)
    keep = draw < leave_unmasked_prob
    randomize = (draw >= leave_unmasked_prob) & (draw < leave_unmasked_prob + random_token_prob)
    inputs[keep] = originals[keep]
    inputs[randomize] = rng.choice(random_candidates, size=int(randomize.sum()))
    return inputs


class MaskedInputCorruption:
    """:func:`corrupt_masked` bound to one dictionary: its mask token, the random-replacement candidates
    (:func:`random_token_candidates`) and the two rates. Every dataset that corrupts masked inputs holds one.

    ``corruption(originals, rng)`` is ``corrupt_masked(originals, rng, mask_idx, candidates, ...)``.
    """

    def __init__(
        self,
        dictionary,
        mask_idx: int,
        leave_unmasked_prob: float = MaskingConfig.leave_unmasked_prob,
        random_token_prob: float = MaskingConfig.random_token_prob,
    ):
        self.mask_idx = mask_idx
        self.random_candidates = random_token_candidates(dictionary, mask_idx)
        self.leave_unmasked_prob = leave_unmasked_prob
        self.random_token_prob = random_token_prob

    def __call__(self, originals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return corrupt_masked(
            originals,
            rng,
            self.mask_idx,
            self.random_candidates,
            self.leave_unmasked_prob,
            self.random_token_prob,
        )
