"""The squad_qa task in process: files, model with a fresh span head from a pre-trained checkpoint,
inference over bad input answers every question."""

import json

import pytest
import torch
from fairseq.data import Dictionary
from omegaconf import OmegaConf

from unilm_fairseq.models.unilmv2 import UniLMv2Model
from unilm_fairseq.qa.offset_tokenizers import word_tokens
from unilm_fairseq.qa.span_decoding import Span, answer_text
from unilm_fairseq.qa.squad_inference import decode_answers, window_logits
from unilm_fairseq.tasks.squad_qa import SquadQAConfig, SquadQATask

from ..helpers.cli import REPO
from ..helpers.models import save_checkpoint, tiny_config
from ..helpers.squad import vocabulary


def model_config():
    """What fairseq hands ``build_model``: a structured config naming the model."""
    cfg = OmegaConf.structured(tiny_config(max_positions=16))
    cfg._name = "unilmv2"
    return cfg


@pytest.fixture
def task(tmp_path):
    (tmp_path / "dict.txt").write_text("\n".join(vocabulary()) + "\n")
    context = "kalo mire . beta zita Kamo . alpha nu ."
    qas = [
        {
            "id": "ok",
            "question": "What follows beta ?",
            "answers": [{"text": "zita Kamo", "answer_start": 17}],
        },
        {
            "id": "mismatch",
            "question": "What follows alpha ?",
            "answers": [{"text": "nu", "answer_start": 0}],
        },
        {"id": "empty", "question": "", "answers": [{"text": "nu", "answer_start": 35}]},
        {"id": "none", "question": "What follows gamma ?", "answers": [], "is_impossible": True},
    ]
    data = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}
    (tmp_path / "dev-v2.0.json").write_text(json.dumps(data))
    cfg = SquadQAConfig(data=str(tmp_path), max_seq_length=16, doc_stride=4, max_query_length=6)
    return SquadQATask.setup_task(cfg)


def test_official_file_names_and_split_errors(task):
    assert task.split_file("valid").endswith("dev-v2.0.json")
    with pytest.raises(FileNotFoundError, match="train.json"):
        task.split_file("train")


def test_window_too_small_for_the_question_is_a_clear_error(tmp_path):
    (tmp_path / "dict.txt").write_text("\n".join(vocabulary()) + "\n")
    with pytest.raises(ValueError, match="no room for the passage"):
        SquadQATask.setup_task(SquadQAConfig(data=str(tmp_path), max_seq_length=20, max_query_length=17))
    with pytest.raises(FileNotFoundError, match="--qa-sentencepiece-model"):
        SquadQATask.setup_task(SquadQAConfig(data=str(tmp_path), qa_tokenizer="sentencepiece"))


def test_a_file_with_no_question_left_is_a_clear_error(task, tmp_path):
    """Every question skipped (here: all empty) leaves no window: one error naming the file, not an
    IndexError inside fairseq's batching."""
    qas = [{"id": f"q{i}", "question": "", "answers": [{"text": "nu", "answer_start": 35}]} for i in range(3)]
    context = "kalo mire . beta zita Kamo . alpha nu ."
    data = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}
    (tmp_path / "empty.json").write_text(json.dumps(data))
    for training in (True, False):
        with pytest.raises(ValueError, match=r"empty.json: no question left to"):
            task.load_squad(str(tmp_path / "empty.json"), training=training)


def test_pretrained_checkpoint_keeps_weights_and_starts_a_fresh_span_head(task, tmp_path):
    cfg = tiny_config(max_positions=16)
    torch.manual_seed(3)
    pretrained = UniLMv2Model(cfg, task.dictionary)
    pretrained.register_span_head("other_task")  # another task's head in the checkpoint is left out
    save_checkpoint(pretrained.state_dict(), tmp_path / "pretrained.pt")
    task.cfg.pretrained_checkpoint = str(tmp_path / "pretrained.pt")
    model = task.build_model(model_config())
    state, old = model.state_dict(), pretrained.state_dict()
    assert set(k for k in state if k.startswith("span_heads.")) == {
        "span_heads.squad_span_head.out_proj.weight", "span_heads.squad_span_head.out_proj.bias"}  # fmt: skip
    for key, value in state.items():
        if not key.startswith("span_heads."):
            assert torch.equal(value, old[key]), key


def test_inference_answers_every_question_of_bad_input(task):
    dataset = task.load_squad(task.split_file("valid"), training=False)
    assert dataset.stats["skipped_empty_question"] == 1 and dataset.stats["answer_mismatch"] == 1
    torch.manual_seed(0)
    model = task.build_model(model_config())
    scores = window_logits(model, dataset, task.cfg.span_head_name, batch_size=3)
    assert set(scores) == set(range(len(dataset)))
    answers = decode_answers(dataset, scores, n_best=5, max_answer_length=3, allow_no_answer=False)
    assert set(answers.text) == {"ok", "mismatch", "empty", "none"}
    assert answers.text["empty"] == ""  # skipped: the empty answer
    context = dataset.examples[0].context
    for qid in ("ok", "mismatch", "none"):  # v1.1 mode: a non-empty piece of the passage, at most 3 tokens
        assert answers.text[qid] and answers.text[qid] in context
        assert len(answers.nbest[qid]) <= 5
    # batching does not change the scores (dropout is off)
    alone = window_logits(model, dataset, task.cfg.span_head_name, batch_size=1)
    for index, (start, end) in scores.items():
        assert torch.allclose(torch.from_numpy(start), torch.from_numpy(alone[index][0]), atol=1e-5)
        assert torch.allclose(torch.from_numpy(end), torch.from_numpy(alone[index][1]), atol=1e-5)
    # training skips the mismatched answer as well
    training = task.load_squad(task.split_file("valid"), training=True)
    kept = {training.examples[w.example].qid for w in training.windows}
    assert kept == {"ok", "none"}


def test_squad_fixture_answers_map_back_to_the_original_text(tmp_path):
    """Word tokens on real SQuAD v1.1 text: every gold answer's token span cuts out exactly its text."""
    fixture = f"{REPO}/tests/fixtures/seq2seq/squad/train-v1.1.json"
    d = Dictionary()
    with open(fixture) as f:
        for article in json.load(f)["data"]:
            for paragraph in article["paragraphs"]:
                for token in word_tokens(
                    paragraph["context"] + " " + " ".join(q["question"] for q in paragraph["qas"])
                ):
                    d.add_symbol(token.text)
    d.save(str(tmp_path / "dict.txt"))
    (tmp_path / "train.json").symlink_to(fixture)
    task = SquadQATask.setup_task(SquadQAConfig(data=str(tmp_path), qa_tokenizer="words", max_seq_length=24,
                                                doc_stride=5, max_query_length=12))  # fmt: skip
    dataset = task.load_dataset("train")
    assert dataset.stats["questions"] == 4 and dataset.stats["windows"] > 4  # passages longer than a window
    found = {}
    for index in range(len(dataset)):
        item, window = dataset[index], dataset.windows[index]
        start, end = item["target"]
        if start == 0:
            continue
        example = dataset.examples[window.example]
        spans = dataset.tokenized[window.example].doc_spans
        offset = item["passage"][0]
        assert d[int(item["tokens"][start])] != "<unk>"
        text = answer_text(example.context, spans, Span(0.0, window.doc_start + start - offset,
                                                         window.doc_start + end - offset))  # fmt: skip
        found.setdefault(example.qid, set()).add(text)
    assert found == {"gp-1": {"1874"}, "gp-2": {"oil"}, "gp-3": {"120"}, "gp-4": {"the keepers"}}
