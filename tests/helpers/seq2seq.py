"""The tiny s2s-ft setting: a dictionary, three source/target pairs, a sharpened decoding model, and the
log-probs of the training forward, of cached and of recomputed decoding, and teacher-forced logits."""

import argparse
import functools

import torch
import torch.nn.functional as F

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.data.seq2seq.seq2seq_dataset import Seq2SeqDataset
from unilm_fairseq.seq2seq_layout import Seq2SeqSpec
from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig, UniLMSeq2SeqTask, _TokenList

from .models import make_dictionary, tiny_model

D = make_dictionary()
EOS, PAD, MASK = D.eos(), D.pad(), D.index("<mask>")
WORDS = list(range(D.nspecial, MASK))  # the w0.. symbols
TOL = 1e-5
WEIGHT_SCALE, EOS_BIAS = 5.0, 1.0
MAX_LEN_B = 6


def line(length: int, salt: int) -> torch.Tensor:
    """A fairseq-preprocess line: ``length`` word ids then ``</s>``."""
    words = [WORDS[(7 * i + 3 * salt) % len(WORDS)] for i in range(length)]
    return torch.tensor(words + [EOS])


# three pairs with different source and target lengths
SOURCES = [line(5, 1), line(9, 2), line(3, 3)]
TARGETS = [line(4, 4), line(6, 5), line(2, 6)]


def pairs_dataset(method, sources=SOURCES, targets=TARGETS, max_source=32, max_target=16, **kwargs):
    tgt = None if targets is None else _TokenList(targets)
    spec = Seq2SeqSpec(method, max_source, max_target, kwargs.pop("segments", seq2seq_layout.PAIR_SEGMENTS))
    return Seq2SeqDataset(_TokenList(sources), tgt, D, spec, **kwargs)


def collate(dataset, indices=None):
    indices = range(len(dataset)) if indices is None else indices
    return dataset.collater([dataset[i] for i in indices])


def sharpened_model(dictionary, method: str, **overrides):
    """A tiny model with sharp predictions and a bias towards [EOS]: hypotheses of varied lengths."""
    model = tiny_model(dictionary, seq2seq_method=method, **overrides)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(WEIGHT_SCALE)
        model.lm_head.bias[dictionary.eos()] += EOS_BIAS
    return model


def make_task(**overrides):
    cfg = UniLMSeq2SeqConfig(data="x", seed=1, **overrides)
    return UniLMSeq2SeqTask(cfg, D)


TASK = make_task()


def incremental_logprobs(model, src_tokens, targets):
    """Log-prob of each reference token, teacher-forced through the cached decoder step by step."""
    longest = max(len(t) for t in targets)
    # [EOS] then the reference; rows whose target has ended keep feeding [EOS] (outputs ignored)
    prev = torch.full((len(targets), longest + 1), EOS)
    for i, target in enumerate(targets):
        prev[i, 1 : 1 + len(target)] = target
    state = {}
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        steps = []
        for t in range(longest):
            logits, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
            steps.append(F.log_softmax(logits[:, 0].float(), dim=-1))
    lprobs = torch.stack(steps, 1)  # B x T x V
    return [lprobs[i, torch.arange(len(t)), t] for i, t in enumerate(targets)]


def recomputed_logprobs(model, src_tokens, targets):
    """Log-prob of each reference token, teacher-forced through ``_recompute`` (no incremental state)."""
    longest = max(len(t) for t in targets)
    prev = torch.full((len(targets), longest + 1), EOS)
    for i, target in enumerate(targets):
        prev[i, 1 : 1 + len(target)] = target
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        steps = []
        for t in range(longest):
            logits, _ = model.decoder(prev[:, : t + 1], encoder_out)
            steps.append(F.log_softmax(logits[:, 0].float(), dim=-1))
    lprobs = torch.stack(steps, 1)  # B x T x V
    return [lprobs[i, torch.arange(len(t)), t] for i, t in enumerate(targets)]


def training_logprobs(
    model, method, perturb=lambda net_input: net_input, segments=seq2seq_layout.PAIR_SEGMENTS
):
    """Log-prob of each reference token from the training forward, with the context decoding sees."""
    dataset = pairs_dataset(method, word_drop_prob=0.0, segments=segments)
    items = [dataset[i] for i in range(len(dataset))]
    targets = [item["target"] for item in items]
    if method != "masked":
        batch = dataset.collater(items)
        net_input = perturb(batch["net_input"])
        with torch.no_grad():
            logits, _ = model(**net_input)
        lprobs = F.log_softmax(logits.float(), dim=-1)
        gold = batch["layout_target"][net_input["masked_tokens"]]
        assert gold.tolist() == torch.cat(targets).tolist()
        picked = lprobs.gather(1, gold.unsqueeze(1)).squeeze(1)
        return list(picked.split([len(t) for t in targets])), targets
    # masked: one layout per target position j whose only [M] is at j (the context decoding has)
    per_example = [[] for _ in items]
    for j in range(max(len(t) for t in targets)):
        rows = [i for i, t in enumerate(targets) if len(t) > j]
        layouts = []
        for i in rows:
            inputs = targets[i].clone()
            inputs[j] = MASK
            predict = torch.zeros(len(inputs), dtype=torch.bool)
            predict[j] = True
            layouts.append(
                seq2seq_layout.build_example(items[i]["source"], inputs, predict, "masked", MASK, segments)
            )
        net_input = perturb(seq2seq_layout.collate_examples(layouts, PAD, segment_pad=segments[0]))
        with torch.no_grad():
            logits, _ = model(**net_input)  # one query per row
        lprobs = F.log_softmax(logits.float(), dim=-1)
        for row, i in enumerate(rows):
            per_example[i].append(lprobs[row, targets[i][j]])
    return [torch.stack(lp) for lp in per_example], targets


def generate(model, batch, incremental, seed=None, prefix_tokens=None, **options):
    args = argparse.Namespace(**{"beam": 1, "max_len_b": MAX_LEN_B, **options})
    generator = TASK.build_generator([model], args)
    generator.model.has_incremental = incremental  # False: every step recomputes the whole prefix
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        return generator.generate([model], batch, prefix_tokens=prefix_tokens)


def assert_same_hypotheses(a, b):
    assert len(a) == len(b)
    for hyps_a, hyps_b in zip(a, b):
        assert len(hyps_a) == len(hyps_b)
        for ha, hb in zip(hyps_a, hyps_b):
            assert ha["tokens"].tolist() == hb["tokens"].tolist()
            assert abs(float(ha["score"]) - float(hb["score"])) < TOL
            assert torch.allclose(ha["positional_scores"], hb["positional_scores"], atol=TOL)


@functools.lru_cache(maxsize=None)
def decoding_model(method: str):
    return sharpened_model(D, method)


def teacher_forced_logits(model, src_tokens, prev, new_order=None):
    """Next-token logits at every step; ``new_order`` reorders the encoder output as beam search does."""
    state, steps = {}, []
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        if new_order is not None:
            encoder_out = model.encoder.reorder_encoder_out(encoder_out, new_order)
        for t in range(prev.size(1)):
            logits, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
            steps.append(logits[:, 0])
    return torch.stack(steps, 1)
