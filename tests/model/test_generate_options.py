"""fairseq-generate's search options through the generation tasks, on tiny checkpoints.

``--score-reference`` (fairseq's ``SequenceScorer``) gives each reference's log-probabilities as the
Python API's ``score`` reads them, for every s2s-ft method, ensembles and PALM included, and through the
console script. ``--diverse-beam-groups`` decodes a batch as it decodes each of its sentences alone,
whatever the batch's sample ids: fairseq 0.12's diverse beam search looked its per-sentence counts up by
sample id. ``--print-alignment`` is refused with a reason for UniLM and works for PALM.
"""

import argparse
import math
import re

import pytest
import torch
from fairseq.sequence_scorer import SequenceScorer
from fairseq.token_generation_constraints import pack_constraints

from unilm_fairseq import UniLMModel
from unilm_fairseq.seq2seq_layout import METHODS

from ..helpers.cli import run_cli
from ..helpers.hub import CHECKPOINT, palm_hub, palm_task, save_seq2seq_checkpoint, write_pairs
from ..helpers.palm import palm_model
from ..helpers.seq2seq import (
    SOURCES,
    TARGETS,
    TASK,
    WORDS,
    D,
    assert_same_hypotheses,
    pairs_dataset,
    sharpened_model,
)

pytestmark = pytest.mark.usefixtures("one_thread")

TOL = 1e-5
METHOD_NAMES = [m.value for m in METHODS]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A checkpoint folder per fine-tuning method, its pairs binarized as the ``train`` split."""
    root = tmp_path_factory.mktemp("generate_options")
    found = {}
    for method in METHOD_NAMES:
        folder = root / method
        save_seq2seq_checkpoint(folder, sharpened_model(D, method))
        write_pairs(folder, "train", SOURCES, TARGETS, D)
        found[method] = folder
    return found


@pytest.fixture(scope="module")
def hubs(folders):
    return {method: UniLMModel.from_pretrained(str(folder), CHECKPOINT) for method, folder in folders.items()}


def train_batch(task):
    dataset = task.load_dataset("train")
    return dataset.collater([dataset[i] for i in range(len(dataset))])


def scorer(task, models):
    generator = task.build_generator(models, argparse.Namespace(score_reference=True))
    assert isinstance(generator, SequenceScorer)  # what fairseq-generate --score-reference builds
    return generator


def check_reference_scores(hypos, batch, expected):
    """``hypos`` (a scorer's, in batch order) against ``expected[pair]`` positional scores."""
    assert len(hypos) == len(batch["id"])
    for (hypo,), pair in zip(hypos, batch["id"].tolist()):
        assert hypo["tokens"].tolist() == TARGETS[pair].tolist()  # the reference, </s> included
        torch.testing.assert_close(hypo["positional_scores"], expected[pair], atol=TOL, rtol=0)
        assert float(hypo["score"]) == pytest.approx(float(expected[pair].mean()), abs=TOL)
        assert hypo["alignment"] is None


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_score_reference_gives_the_api_scores(hubs, method):
    hub = hubs[method]
    batch = train_batch(hub.task)
    with torch.no_grad():
        hypos = hub.task.inference_step(scorer(hub.task, [hub.model]), [hub.model], batch)
    check_reference_scores(hypos, batch, [r["positional_scores"] for r in hub.score(SOURCES, TARGETS)])


def test_score_reference_averages_an_ensemble_s_probabilities(hubs):
    """Two models of different methods: each reads its own layout, and their probabilities are averaged."""
    task = hubs["pseudo_masked"].task
    models = [hubs["pseudo_masked"].model, hubs["causal"].model]
    batch = train_batch(task)
    with torch.no_grad():
        hypos = task.inference_step(scorer(task, models), models, batch)
    alone = [hubs[m].score(SOURCES, TARGETS) for m in ("pseudo_masked", "causal")]
    expected = [
        torch.log((a["positional_scores"].exp() + b["positional_scores"].exp()) / 2) for a, b in zip(*alone)
    ]
    check_reference_scores(hypos, batch, expected)
    # not one model's scores: the average differs from each
    assert not torch.allclose(expected[0], alone[0][0]["positional_scores"], atol=1e-3)


def test_score_reference_on_palm_gives_the_api_scores(tmp_path):
    """PALM has a decoder over the whole reference, so fairseq's own scorer runs it."""
    write_pairs(tmp_path, "train", SOURCES, TARGETS, D)
    hub = palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D, tmp_path))
    batch = train_batch(hub.task)
    with torch.no_grad():
        hypos = hub.task.inference_step(scorer(hub.task, [hub.model]), [hub.model], batch)
    check_reference_scores(hypos, batch, [r["positional_scores"] for r in hub.score(SOURCES, TARGETS)])


def test_fairseq_generate_score_reference(folders, hubs):
    """The console script prints each reference as its hypothesis, with the API's scores."""
    folder = folders["pseudo_masked"]
    out = run_cli(["fairseq-generate", str(folder), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                   "--path", str(folder / CHECKPOINT), "--gen-subset", "train", "--score-reference",
                   "--batch-size", "2", "--cpu"]).stdout  # fmt: skip
    lines = dict(re.findall(r"^([TPH]-\d+)\t(.*)$", out, re.M))
    scored = hubs["pseudo_masked"].score(SOURCES, TARGETS)
    for pair, result in enumerate(scored):
        score, text = lines[f"H-{pair}"].split("\t")
        assert text == lines[f"T-{pair}"]
        # fairseq-generate prints base-2 scores
        assert float(score) == pytest.approx(float(result["score"]) / math.log(2), abs=1e-4)
        printed = [float(p) for p in lines[f"P-{pair}"].split()]
        assert printed == pytest.approx((result["positional_scores"] / math.log(2)).tolist(), abs=1e-4)


def diverse_generate(task, model, batch, ids=None):
    if ids is not None:
        batch = {**batch, "id": torch.tensor(ids)}
    args = argparse.Namespace(beam=4, diverse_beam_groups=2, diverse_beam_strength=0.3, max_len_b=6)
    generator = task.build_generator([model], args)
    with torch.no_grad():
        return task.inference_step(generator, [model], batch)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_diverse_beam_search_decodes_a_batch_as_each_sentence_alone(hubs, method):
    hub = hubs[method]
    dataset = hub.task.load_dataset("train")
    alone = [
        diverse_generate(hub.task, hub.model, dataset.collater([dataset[i]]), ids=[0])[0]
        for i in range(len(dataset))
    ]
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    # sample ids past the batch size (a later batch of a test set), then ids that are not the rows' places
    for ids in ([7, 12, 30], [2, 0, 1], [1, 2, 0]):
        assert_same_hypotheses(diverse_generate(hub.task, hub.model, batch, ids), alone)
    # the groups' penalty is at work: the hypotheses differ from plain beam search's
    plain = hub.task.build_generator([hub.model], argparse.Namespace(beam=4, max_len_b=6))
    with torch.no_grad():
        beam = hub.task.inference_step(plain, [hub.model], batch)
    assert any(
        [h["tokens"].tolist() for h in a] != [h["tokens"].tolist() for h in b] for a, b in zip(beam, alone)
    )


def test_diverse_beam_search_on_palm_decodes_a_batch_as_each_sentence_alone(tmp_path):
    write_pairs(tmp_path, "train", SOURCES, TARGETS, D)
    hub = palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D, tmp_path))
    dataset = hub.task.load_dataset("train")
    alone = [
        diverse_generate(hub.task, hub.model, dataset.collater([dataset[i]]), ids=[0])[0]
        for i in range(len(dataset))
    ]
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    order = batch["id"].tolist()  # the translation collater sorts by source length
    expected = [alone[pair] for pair in order]
    for ids in ([7, 12, 30], [2, 0, 1], [1, 2, 0]):
        assert_same_hypotheses(diverse_generate(hub.task, hub.model, batch, ids), expected)


@pytest.mark.parametrize("mode", ["hard", "soft"])
@pytest.mark.parametrize("score_reference", [False, True])
def test_print_alignment_is_refused_for_unilm_and_works_for_palm(hubs, tmp_path, mode, score_reference):
    """fairseq's aligning generator and scorer read the decoder's cross-attention: UniLM says it has none
    (it used to fail inside fairseq with an IndexError); PALM's decoder gives it."""
    args = argparse.Namespace(beam=2, max_len_b=6, print_alignment=mode, score_reference=score_reference)
    hub = hubs["pseudo_masked"]
    with pytest.raises(ValueError, match="--print-alignment: a unilm_seq2seq model has no encoder-decoder"):
        hub.task.build_generator([hub.model], args)
    write_pairs(tmp_path, "train", SOURCES, TARGETS, D)
    palm = palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D, tmp_path))
    batch = train_batch(palm.task)
    with torch.no_grad():
        hypos = palm.task.inference_step(palm.task.build_generator([palm.model], args), [palm.model], batch)
    assert all(hypo[0]["alignment"] for hypo in hypos)  # one entry per target token, at least


def contains(tokens, piece):
    tokens, piece = tokens.tolist(), piece.tolist()
    return any(tokens[i : i + len(piece)] == piece for i in range(len(tokens) - len(piece) + 1))


def constrained_generate(task, model, constraints, order="ordered", step="eager", beam=4, max_len_b=12):
    """``fairseq-interactive --constraints``'s path: the inference dataset, its batch's packed constraints,
    the constrained search."""
    dataset = task.build_dataset_for_inference(SOURCES, [len(s) for s in SOURCES], constraints=constraints)
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    args = argparse.Namespace(
        beam=beam, max_len_b=max_len_b, constraints=None if constraints is None else order
    )
    kept = getattr(task.cfg, "decoding_step", None)
    if kept is not None:
        task.cfg.decoding_step = step
    try:
        with torch.no_grad():
            return batch, task.inference_step(
                task.build_generator([model], args), [model], batch, constraints=batch.get("constraints")
            )
    finally:
        if kept is not None:
            task.cfg.decoding_step = kept


# per source, the constraints (word ids of the tiny dictionary), one of them two tokens long
CONSTRAINTS = [[torch.tensor([WORDS[5], WORDS[6]])], [torch.tensor([WORDS[9]]), torch.tensor([WORDS[2]])], []]


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_constrained_decoding_puts_every_constraint_in_every_hypothesis(hubs, method):
    task, model = hubs[method].task, hubs[method].model
    packed = pack_constraints(CONSTRAINTS)
    batch, plain = constrained_generate(task, model, None)
    # the constraints are not what the model says anyway
    assert not all(contains(h[0]["tokens"], c) for h, cs in zip(plain, CONSTRAINTS) for c in cs)
    for order in ("ordered", "unordered"):
        batch, hypos = constrained_generate(task, model, packed, order)
        assert batch["constraints"].shape == packed.shape
        for hyps, pair in zip(hypos, batch["id"].tolist()):
            for hypo in hyps:
                assert all(contains(hypo["tokens"], c) for c in CONSTRAINTS[pair])
        # fixed-shape steps follow the constrained search's reorders as eager steps do
        assert_same_hypotheses(constrained_generate(task, model, packed, order, step="static")[1], hypos)


def test_constrained_decoding_on_palm(tmp_path):
    write_pairs(tmp_path, "train", SOURCES, TARGETS, D)
    hub = palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D, tmp_path))
    batch, hypos = constrained_generate(hub.task, hub.model, pack_constraints(CONSTRAINTS))
    for hyps, pair in zip(hypos, batch["id"].tolist()):
        assert all(contains(hyps[0]["tokens"], c) for c in CONSTRAINTS[pair])


def test_constraints_go_with_sources_alone():
    dataset = pairs_dataset("causal", targets=None, constraints=pack_constraints(CONSTRAINTS))
    assert "constraints" in dataset.collater([dataset[0], dataset[2]])
    with pytest.raises(ValueError, match="constraints go with sources alone"):
        pairs_dataset("causal", constraints=pack_constraints(CONSTRAINTS))


def test_constrained_search_without_constraints_says_where_they_go(hubs, folders, tmp_path):
    """``fairseq-generate --constraints`` reads binarized pairs, which carry no constraints; fairseq's search
    failed on them with a TypeError. The generation tasks name where constraints go instead."""
    message = "this batch carries no constraints"
    write_pairs(tmp_path, "train", SOURCES, TARGETS, D)
    palm = palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D, tmp_path))
    for hub in (hubs["pseudo_masked"], palm):
        dataset = hub.task.build_dataset_for_inference(SOURCES, [len(s) for s in SOURCES])
        batch = dataset.collater([dataset[i] for i in range(len(dataset))])
        generator = hub.task.build_generator([hub.model], argparse.Namespace(beam=4, constraints="ordered"))
        with pytest.raises(ValueError, match=message):
            hub.task.inference_step(generator, [hub.model], batch, constraints=batch.get("constraints"))
    folder = folders["pseudo_masked"]
    proc = run_cli(["fairseq-generate", str(folder), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                    "--path", str(folder / CHECKPOINT), "--gen-subset", "train", "--constraints",
                    "--batch-size", "2", "--cpu"], check=False)  # fmt: skip
    assert proc.returncode != 0
    assert message in proc.stderr and "fairseq-interactive" in proc.stderr
    assert "TypeError" not in proc.stderr


@pytest.mark.parametrize("system", ["pseudo_masked", "palm"])
def test_constraints_that_cannot_fit_the_length_limit_say_so(hubs, tmp_path, system):
    """A 3-token constraint within 2 output tokens: fairseq's constrained search fails its assertion; the
    generation tasks say what to change."""
    if system == "palm":
        write_pairs(tmp_path, "train", SOURCES, TARGETS, D)
        hub = palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D, tmp_path))
    else:
        hub = hubs[system]
    too_long = pack_constraints([[torch.tensor(WORDS[3:6])], [], []])
    with pytest.raises(ValueError, match="constrained decoding reached the length limit before --beam 4"):
        constrained_generate(hub.task, hub.model, too_long, max_len_b=2)


@pytest.mark.parametrize("system", ["pseudo_masked", "palm"])
def test_the_python_api_takes_constraints_as_ids_or_text(hubs, tmp_path, system):
    if system == "palm":
        write_pairs(tmp_path, "train", SOURCES, TARGETS, D)
        hub = palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D, tmp_path))
    else:
        hub = hubs[system]
    hypos = hub.generate(list(SOURCES), beam=4, max_len_b=12, constraints=CONSTRAINTS)
    for hyps, phrases in zip(hypos, CONSTRAINTS):
        assert all(contains(hyps[0]["tokens"], c) for c in phrases)
    as_text = [[hub.string(c) for c in phrases] for phrases in CONSTRAINTS]
    again = hub.generate(list(SOURCES), beam=4, max_len_b=12, constraints=as_text)
    assert [h[0]["tokens"].tolist() for h in again] == [h[0]["tokens"].tolist() for h in hypos]
    single = hub.generate(
        SOURCES[1], beam=4, max_len_b=12, constraints=CONSTRAINTS[1], ordered_constraints=False
    )
    assert all(contains(single[0]["tokens"], c) for c in CONSTRAINTS[1])
    with pytest.raises(ValueError, match="one list of phrases per input, got 1 for 3"):
        hub.generate(list(SOURCES), constraints=CONSTRAINTS[:1])
    with pytest.raises(TypeError, match=r"constraints\[0\]: expected a list of phrases"):
        hub.generate(list(SOURCES), constraints=["w1", "w2", "w3"])
    with pytest.raises(ValueError, match="a phrase is empty or holds </s>"):
        hub.generate(list(SOURCES), constraints=[[torch.tensor([D.eos()])], [], []])


def match_source_len_generate(hub, batch):
    generator = hub.task.build_generator([hub.model], argparse.Namespace(beam=2, match_source_len=True))
    with torch.no_grad():
        return hub.task.inference_step(generator, [hub.model], batch)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_match_source_len_counts_the_source_as_fairseq_translation_does(hubs, method):
    """A translation source is its words and </s>, and fairseq decodes as many tokens before the final
    </s>; "[SOS] words [EOS]" gives the same count (the [SOS] was counted as one more output word)."""
    hub = hubs[method]
    dataset = hub.task.load_dataset("train")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    hypotheses = match_source_len_generate(hub, batch)
    words = (batch["net_input"]["src_lengths"] - 2).tolist()  # without [SOS] and [EOS]
    assert [len(h[0]["tokens"]) - 1 for h in hypotheses] == [n + 1 for n in words]


def test_match_source_len_past_the_position_table_is_named_before_decoding(hubs):
    hub = hubs["pseudo_masked"]
    dataset = hub.task.load_dataset("train")
    item = dataset[0]["source"]
    table = hub.model.max_decoder_positions()
    long_source = torch.cat([item[:1], item[1:2].repeat(table // 2), item[-1:]])  # [SOS] w ... w [EOS]
    batch = dataset.collater([{**dataset[0], "source": long_source}])
    with pytest.raises(ValueError, match="--match-source-len: sources of up to"):
        match_source_len_generate(hub, batch)


def retained_dropout_scores(retain, seed, modules=None):
    """The best hypotheses' scores of a model with dropout 0.3 everywhere, decoded after fairseq's
    inference preparation with or without --retain-dropout."""
    model = sharpened_model(D, "pseudo_masked", dropout=0.3, attention_dropout=0.3, activation_dropout=0.3)
    model.make_generation_fast_(retain_dropout=retain, retain_dropout_modules=modules)
    dataset = pairs_dataset("pseudo_masked")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    generator = TASK.build_generator([model], argparse.Namespace(beam=2, max_len_b=6))
    torch.manual_seed(seed)
    with torch.no_grad():
        return [float(h[0]["score"]) for h in TASK.inference_step(generator, [model], batch)]


def test_retain_dropout_keeps_dropout_at_inference():
    assert retained_dropout_scores(False, 1) == retained_dropout_scores(False, 2)
    assert retained_dropout_scores(True, 1) != retained_dropout_scores(True, 2)  # it was ignored
    assert retained_dropout_scores(True, 1) == retained_dropout_scores(True, 1)
    # --retain-dropout-modules names module classes: a class of another model keeps dropout off
    off = retained_dropout_scores(True, 2, ["TransformerEncoderLayer"])
    assert off == retained_dropout_scores(False, 1)
    assert retained_dropout_scores(True, 2, ["UniLMTransformerLayer"]) != off
