"""Dataset preparation for seq2seq fine-tuning: the public release formats of CNN/DailyMail, XSum, Gigaword
and SQuAD, read from hand-written fixtures (tests/fixtures/seq2seq), through the functions and the CLI."""

import json
import os
from collections import Counter

import pytest

from unilm_fairseq.encoders.wordpiece_tokenizer import basic_tokenize
from unilm_fairseq.prepare import seq2seq_release_formats as sources
from unilm_fairseq.prepare.seq2seq_release_formats import Pair, WordPieceTokenizer

from ..helpers.cli import REPO, run_cli

FIXTURES = os.path.join(REPO, "tests", "fixtures", "seq2seq")
SCRIPT = os.path.join(REPO, "scripts", "prepare_seq2seq_data.py")

LIBRARY_ARTICLE = (
    "(CNN) -- The public library in the harbor town of Westbrook reopened on Saturday after a two-year "
    "renovation paid for by residents. The new building has a reading garden, a children's room and a "
    'workshop for evening classes. "We wanted a place where everyone feels welcome," said librarian '
    "Maria Lopez."
)
LIBRARY_HIGHLIGHTS = (
    "Westbrook library reopens after a two-year renovation",
    "Residents paid for a reading garden and a children's room",
)
LANES_ARTICLE = (
    "(CNN) -- City officials approved a plan on Monday to add protected bicycle lanes along Main Street. "
    "Work will begin in June and should take about four months."
)
BAKERY_ARTICLE = (
    "A family bakery that has served the same neighbourhood for fifty years will close at the end of the "
    "month. The owners said they plan to retire and spend more time with their grandchildren."
)
BAKERY_HIGHLIGHTS = (
    "Neighbourhood bakery closes after fifty years",
    "Owners plan to retire",
    "Regular customers held a farewell party on Sunday",
)
LIGHTHOUSE = (
    "The lighthouse on Gull Point was built in 1874 to guide ships past the rocky coast. "
    "Its lamp burned oil until the keepers switched to electricity in 1921."
)
FESTIVAL = (
    "Each summer the town holds a festival in honour of the keepers. "
    "Visitors can climb the 120 steps to the top of the tower."
)


def prepare(*args, check=True):
    """Run the CLI with this environment's python; returns the process (stderr holds the log)."""
    return run_cli(["python", SCRIPT, *map(str, args)], check=check, timeout=300)


def read(directory, split):
    """(source lines, target lines) of one written split."""
    lines = [
        (directory / f"{split}.{side}").read_text(encoding="utf-8").split("\n") for side in ("src", "tgt")
    ]
    assert all(side[-1] == "" for side in lines), "every line ends with a newline"
    return lines[0][:-1], lines[1][:-1]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------- CNN/DailyMail


def test_story_names_are_sha1_of_urls():
    assert sources.url_hash("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d"  # FIPS 180 test vector
    walk = os.walk(os.path.join(FIXTURES, "cnndm"))
    story_names = {
        name[: -len(".story")] for _, _, names in walk for name in names if name.endswith(".story")
    }
    url_lists = os.path.join(FIXTURES, "cnndm", "url_lists")
    urls = [
        url
        for name in sorted(os.listdir(url_lists))
        for url in open(os.path.join(url_lists, name)).read().split()
    ]
    assert len(urls) == 4 and {sources.url_hash(u) for u in urls} == story_names


def test_cnndm_stories_functions():
    stats = Counter()
    pairs = list(sources.read_cnndm(os.path.join(FIXTURES, "cnndm"), "train", stats=stats))
    assert pairs == [
        Pair((LIBRARY_ARTICLE,), LIBRARY_HIGHLIGHTS),
        Pair(("By Staff Reporter A spring storm brought heavy rain to the valley on Tuesday night. Roads "
              "near the river were closed for several hours.",), ()),
    ]  # fmt: skip
    lines = list(sources.format_pairs(pairs, target_separator="<q>", stats=stats))
    assert lines == [(LIBRARY_ARTICLE, " <q> ".join(LIBRARY_HIGHLIGHTS))]
    assert stats == Counter(written=1, skipped_empty=1)

    test = list(sources.read_cnndm(os.path.join(FIXTURES, "cnndm"), "test"))
    assert list(sources.format_pairs(test)) == [(BAKERY_ARTICLE, " ".join(BAKERY_HIGHLIGHTS))]  # no separator


def test_cnndm_stories_cli_truncates_and_counts(tmp_path):
    out = tmp_path / "cnndm"
    proc = prepare("--format", "cnndm", "--input", f"{FIXTURES}/cnndm", "--output", out,
                   "--max-source-tokens", 20, "--max-target-tokens", 12)  # fmt: skip
    assert read(out, "train") == (
        ["(CNN) -- The public library in the harbor town of Westbrook reopened on Saturday after a two-year "
         "renovation paid for"],
        ["Westbrook library reopens after a two-year renovation <q> Residents paid for a"],
    )  # fmt: skip
    assert read(out, "valid") == (
        ["(CNN) -- City officials approved a plan on Monday to add protected bicycle lanes along Main "
         "Street. Work will begin"],
        ["Main Street will get protected bicycle lanes <q> Work begins in June"],  # 12 tokens: not cut
    )  # fmt: skip
    assert read(out, "test") == (
        ["A family bakery that has served the same neighbourhood for fifty years will close at the end of "
         "the month."],
        ["Neighbourhood bakery closes after fifty years <q> Owners plan to retire"],  # dangling <q> cut too
    )  # fmt: skip
    log = proc.stderr
    assert "train: 1 pairs" in log and "skipped 1 with an empty source or target, 0 listed but missing" in log
    assert "truncated 1 sources (limit 20 tokens) and 1 targets (limit 12 tokens)" in log
    assert "valid: 1 pairs" in log and "truncated 1 sources (limit 20 tokens) and 0 targets" in log


def test_cnndm_line_files_and_separators():
    pairs = list(sources.read_cnndm(f"{FIXTURES}/cnndm_lines", "valid", sentence_separator="<q>"))  # val.*
    assert pairs[0].target == ("Hourly ferry between the islands starts next week", "Tickets sold on board")
    lines = list(sources.format_pairs(pairs, target_separator="[X_SEP]"))
    assert lines == [
        ("A ferry service between the two islands will run every hour from next week . Tickets can be bought "
         "on board .", "Hourly ferry between the islands starts next week [X_SEP] Tickets sold on board"),
        ("The town's oldest oak tree was damaged by lightning on Friday .",
         "Lightning damages town's oldest oak"),
    ]  # fmt: skip


def test_cnndm_malformed_story_names_the_file(tmp_path):
    url = "http://example.org/a-story.html"
    write(tmp_path / "all_train.txt", url + "\n")
    # a marker with no sentence after it (two in a row, one at the end) adds nothing and is counted, as the
    # reference script reads it; one odd story among 300,000 does not stop the preparation
    text = "Some article.\n\n@highlight\n\n@highlight\n\nFirst.\n\n@highlight\n\nSecond.\n\n@highlight\n"
    story = write(tmp_path / "stories" / f"{sources.url_hash(url)}.story", text)
    stats = Counter()
    assert list(sources.read_cnndm(str(tmp_path), "train", stats=stats)) == [
        Pair(("Some article.",), ("First.", "Second."))
    ]
    assert stats["highlight_without_sentence"] == 2
    proc = prepare("--format", "cnndm", "--input", tmp_path, "--output", tmp_path / "o", "--splits", "train")
    assert "train: 2 @highlight markers with no sentence after them (ignored)" in proc.stderr
    story.write_bytes(b"An article \xff\xfe in no encoding.\n\n@highlight\n\nA summary.\n")
    with pytest.raises(ValueError, match=f"{story}: not UTF-8 text"):
        list(sources.read_cnndm(str(tmp_path), "train"))
    story.unlink()  # listed but absent: counted, not an error
    stats = Counter()
    assert list(sources.read_cnndm(str(tmp_path), "train", stats=stats)) == [] and stats["missing"] == 1


# --------------------------------------------------------------------------------------------- XSum


def test_xsum_functions():
    stats = Counter()
    train = list(sources.read_xsum(f"{FIXTURES}/xsum", "train", stats=stats))
    assert train == [
        Pair(("The school started a scheme two years ago in which older pupils read with younger ones every "
              "morning. Teachers said the number of books borrowed from the school library had doubled. The "
              "award will be presented in London next month.",),
             ("A village primary school with just forty pupils has won a national award for encouraging "
              "children to read.",))
    ]  # fmt: skip
    assert stats["missing"] == 1  # 10000099 is listed in the split file but has no file
    valid = list(sources.read_xsum(f"{FIXTURES}/xsum", "valid"))  # "validation" key, a .data file
    assert valid[0].target == (
        "A popular coastal footpath has reopened three months after a landslide swept part of it into the "
        "sea.",
    )


def test_xsum_cli(tmp_path):
    out = tmp_path / "xsum"
    proc = prepare(
        "--format", "xsum", "--input", f"{FIXTURES}/xsum", "--output", out, "--splits", "valid,test"
    )
    assert read(out, "test") == (
        ["A volunteer spotted the flowers while clearing litter near the pond. Park staff have put a small "
         "fence around the plants to protect them."],
        ["A rare wild orchid has been found growing in a city centre park for the first time in decades."],
    )  # fmt: skip
    assert read(out, "valid")[0] == [
        "Engineers built a new section of the path further inland. The council said the route would be "
        "checked after every winter storm."
    ]
    assert not (out / "train.src").exists() and "test: 1 pairs" in proc.stderr


def test_xsum_malformed_files_name_the_file(tmp_path):
    write(tmp_path / sources.XSUM_SPLIT_JSON, json.dumps({"train": ["1"], "validation": [], "test": []}))
    document = write(tmp_path / "1.summary", "[SN]URL[SN]\nhttp://x\n\n[SN]FIRST-SENTENCE[SN]\nA summary.\n")
    with pytest.raises(ValueError, match=rf"{document}: no \[SN\]RESTBODY\[SN\] section"):
        list(sources.read_xsum(str(tmp_path), "train"))
    document.write_text("Just some text, no sections.\n")
    with pytest.raises(ValueError, match=f"{document}: not an XSum file"):
        list(sources.read_xsum(str(tmp_path), "train"))
    split_file = write(tmp_path / "split.json", '{"train": ["1"]}')
    with pytest.raises(ValueError, match=f"{split_file}: not an XSum split file with a 'test' list"):
        list(sources.read_xsum(str(tmp_path), "test", split_json=str(split_file)))


# --------------------------------------------------------------------------------------------- Gigaword


def test_gigaword_functions_and_unk():
    stats = Counter()
    lines = list(
        sources.format_pairs(sources.read_gigaword(f"{FIXTURES}/gigaword", "train", "[UNK]"), stats=stats)
    )
    assert lines == [
        ("the city council on monday approved a budget of ## million dollars for new schools and road "
         "repairs", "city council approves school budget"),
        ("police said a [UNK] fire destroyed a warehouse near the port early on sunday , but no one was hurt",
         "warehouse fire near port"),
        ("farmers in the northern region expect a record wheat harvest after weeks of mild weather",
         "record wheat harvest expected in north"),
    ]  # fmt: skip
    assert stats == Counter(written=3, skipped_empty=1)
    test = list(sources.read_gigaword(f"{FIXTURES}/gigaword", "test"))  # test.article.txt / test.title.txt
    assert test[0].target == ("museum to open new gallery of UNK pottery",)  # kept without unk_token


def test_gigaword_cli(tmp_path):
    out = tmp_path / "giga"
    proc = prepare("--format", "gigaword", "--input", f"{FIXTURES}/gigaword", "--output", out,
                   "--splits", "train,test", "--unk-token", "<unk>", "--lowercase")  # fmt: skip
    museum = "the national museum will open a new gallery of <unk> pottery next spring , its director said"
    assert read(out, "test") == ([museum + " on friday"], ["museum to open new gallery of <unk> pottery"])
    assert read(out, "train")[1][1] == "warehouse fire near port"
    assert "skipped 1 with an empty source or target" in proc.stderr


def test_parallel_files_must_align(tmp_path):
    source = write(tmp_path / "train.src.txt", "a b\nc d\n")
    target = write(tmp_path / "train.tgt.txt", "a\n")
    with pytest.raises(ValueError, match=f"{source} has 2 lines but {target} has 1"):
        list(sources.read_gigaword(str(tmp_path), "train"))


def test_parallel_line_files_split_at_newlines_only(tmp_path):
    """A lone carriage return, U+2028 or U+0085 inside a line is a space, not a line break that would pair
    each later source with another example's target; CRLF ends a line."""
    write(tmp_path / "train.src.txt", "one part A\rpart B\r\ntwo\u2028more\nthree\n")
    write(tmp_path / "train.tgt.txt", "t one\nt two\nt three A\rB\x85C\n")
    pairs = list(sources.read_gigaword(str(tmp_path), "train"))
    assert [(p.source[0], p.target[0]) for p in pairs] == [
        ("one part A part B", "t one"), ("two more", "t two"), ("three", "t three A B C")
    ]  # fmt: skip


def test_text_the_tokenizer_drops_whole_is_skipped_and_counted():
    """A source or target that tokenizes to nothing (zero-width or private-use characters only) is counted
    with the empty ones, not written as an empty line."""
    pairs = [Pair(("a source",), ("a target",)), Pair(("\u200b\u200b",), ("kept target",)),
             Pair(("another source",), ("\ue000",))]  # fmt: skip
    stats = Counter()
    lines = list(sources.format_pairs(pairs, basic_tokenize, stats=stats))
    assert lines == [("a source", "a target")] and stats == Counter(written=1, skipped_empty=2)


def test_nothing_written_is_an_error(tmp_path):
    write(tmp_path / "in" / "train.src.txt", "\n\n")
    write(tmp_path / "in" / "train.tgt.txt", "a title\nanother\n")
    proc = prepare("--format", "gigaword", "--input", tmp_path / "in", "--output", tmp_path / "out",
                   "--splits", "train", check=False)  # fmt: skip
    assert proc.returncode != 0 and "train: no examples written" in proc.stderr
    assert "skipped 2 with an empty source or target" in proc.stderr


# --------------------------------------------------------------------------------------------- SQuAD QG


def test_squad_qg_functions():
    stats = Counter()
    pairs = list(sources.read_squad_qg(f"{FIXTURES}/squad", "train", stats=stats))  # train-v1.1.json
    lines = list(sources.format_pairs(pairs, source_separator="[SEP]"))
    assert lines == [
        (f"1874 [SEP] {LIGHTHOUSE}", "When was the lighthouse on Gull Point built?"),
        (f"oil [SEP] {LIGHTHOUSE}", "What did the lamp burn before 1921?"),
        (f"120 [SEP] {FESTIVAL}", "How many steps lead to the top of the tower?"),
        (f"the keepers [SEP] {FESTIVAL}", "Whom does the summer festival honour?"),
    ]
    assert stats["answer_offset_mismatch"] == 0
    passage_first = sources.read_squad_qg(f"{FIXTURES}/squad", "train", answer_first=False)
    assert next(iter(passage_first)).source == (LIGHTHOUSE, "1874")
    # the Du et al. style line files are used as they are
    assert list(sources.read_squad_qg(f"{FIXTURES}/squad", "test"))[1] == Pair(
        ("visitors can see the original water wheel and grinding stones . [SEP] the original water wheel",),
        ("what can visitors see at the mill ?",),
    )


def test_squad_malformed_and_mismatched(tmp_path):
    broken = write(tmp_path / "train.json", '{"data": [{"paragraphs": [{"context": "x"}]}]}')
    with pytest.raises(ValueError, match=f"{broken}: not a SQuAD v1.1 file"):
        list(sources.read_squad_qg(str(tmp_path), "train"))
    broken.write_text("{not json")
    with pytest.raises(ValueError, match=f"{broken}: not a SQuAD v1.1 file"):
        list(sources.read_squad_qg(str(tmp_path), "train"))
    qas = [
        {"id": "1", "question": "Who?", "answers": [{"answer_start": 0, "text": "Ann"}]},
        {"id": "2", "question": "Where?", "answers": [{"answer_start": 0, "text": "home"}]},  # wrong offset
        {"id": "3", "question": "", "answers": [{"answer_start": 0, "text": "Ann"}]},  # empty question
    ]
    write(
        tmp_path / "train.json",
        json.dumps({"data": [{"paragraphs": [{"context": "Ann went home.", "qas": qas}]}]}),
    )
    stats = Counter()
    lines = list(
        sources.format_pairs(sources.read_squad_qg(str(tmp_path), "train", stats=stats), stats=stats)
    )
    assert [t for _, t in lines] == ["Who?", "Where?"]
    assert stats["answer_offset_mismatch"] == 1 and stats["skipped_empty"] == 1


# --------------------------------------------------------------------------------------------- WordPiece

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "un",
    "##aff",
    "##able",
    "the",
    "cafe",
    "run",
    "##ning",
]
VOCAB += [",", ".", "!", "a"]


def test_wordpiece_greedy_longest_match():
    tokenize = WordPieceTokenizer(VOCAB, lowercase=False)
    assert tokenize("unaffable") == ["un", "##aff", "##able"]
    assert tokenize("xyz") == ["[UNK]"]
    assert tokenize("unaffablex") == ["[UNK]"]  # no full segmentation: the whole word is unknown
    assert tokenize("unaffable, the!") == ["un", "##aff", "##able", ",", "the", "!"]
    assert tokenize("Café running") == ["[UNK]", "run", "##ning"]  # cased: "Café" is not in the vocabulary
    assert WordPieceTokenizer(VOCAB, lowercase=True)("Café Unaffable") == ["cafe", "un", "##aff", "##able"]
    assert WordPieceTokenizer(VOCAB, max_chars_per_word=5)("unaffable the") == ["[UNK]", "the"]


def test_basic_tokenize_splits_punctuation_cjk_and_drops_controls():
    assert basic_tokenize("Hello,world!  ok", lowercase=False) == ["Hello", ",", "world", "!", "ok"]
    assert basic_tokenize("a\x00b\tc", lowercase=False) == ["ab", "c"]
    assert basic_tokenize("北京 is", lowercase=False) == ["北", "京", "is"]
    assert basic_tokenize("Ünïcode", lowercase=True) == ["unicode"]


def test_special_tokens_stay_whole(tmp_path):
    vocab = write(tmp_path / "vocab.txt", "\n".join(VOCAB) + "\n")
    plain = sources.make_tokenizer(wordpiece_vocab=str(vocab), lowercase=True)
    assert plain("Unaffable [SEP] the") == ["un", "##aff", "##able", "[UNK]", "[UNK]", "[UNK]", "the"]
    tokenize = sources.make_tokenizer(wordpiece_vocab=str(vocab), lowercase=True, specials=["[SEP]"])
    assert tokenize("Unaffable [SEP] the") == ["un", "##aff", "##able", "[SEP]", "the"]
    words = sources.make_tokenizer(lowercase=True, specials=["[UNK]"])
    assert words("A [UNK] Fire") == ["a", "[UNK]", "fire"]


def test_wordpiece_cli_on_squad_line_files(tmp_path):
    words = "the old mill on river was turn ##ed into a museum in 1998 . when ? visitors can see original"
    words += " water wheel and grind ##ing stones what at"
    vocab = write(
        tmp_path / "vocab.txt", "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words.split())
    )
    out = tmp_path / "qg"
    prepare("--format", "squad_qg", "--input", f"{FIXTURES}/squad", "--output", out, "--splits", "test",
            "--wordpiece-vocab", vocab, "--lowercase")  # fmt: skip
    assert read(out, "test") == (
        ["the old mill on the river was turn ##ed into a museum in 1998 . [SEP] 1998",
         "visitors can see the original water wheel and grind ##ing stones . [SEP] the original water wheel"],
        ["when was the old mill turn ##ed into a museum ?", "what can visitors see at the mill ?"],
    )  # fmt: skip


def test_squad_json_cli_answer_first(tmp_path):
    out = tmp_path / "qg"
    prepare("--format", "squad_qg", "--input", f"{FIXTURES}/squad", "--output", out, "--splits", "train",
            "--max-source-tokens", 6, "--qg-window", "head")  # fmt: skip
    sources_, targets = read(out, "train")
    # the answer comes first, so truncating a long passage keeps it
    assert sources_ == [
        "1874 [SEP] The lighthouse on Gull",
        "oil [SEP] The lighthouse on Gull",
        "120 [SEP] Each summer the town",
        "the keepers [SEP] Each summer the",
    ]
    assert targets[3] == "Whom does the summer festival honour?"
    # by default the passage keeps a window around the answer (tests/unit/test_qg_windows.py)
    prepare("--format", "squad_qg", "--input", f"{FIXTURES}/squad", "--output", out, "--splits", "train",
            "--max-source-tokens", 6)  # fmt: skip
    assert read(out, "train")[0] == [
        "1874 [SEP] built in 1874 to",
        "oil [SEP] lamp burned oil until",
        "120 [SEP] climb the 120 steps",
        "the keepers [SEP] of the keepers.",
    ]


# --------------------------------------------------------------------------------------------- sentencepiece


def test_sentencepiece_pieces(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    text = write(
        tmp_path / "text.txt", "\n".join([LIBRARY_ARTICLE, LANES_ARTICLE, BAKERY_ARTICLE, *BAKERY_HIGHLIGHTS])
    )
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(tmp_path / "spm"), vocab_size=60, model_type="unigram",
        character_coverage=1.0, hard_vocab_limit=False, bos_id=-1, eos_id=-1, minloglevel=2, num_threads=1,
    )  # fmt: skip
    out = tmp_path / "cnndm"
    prepare("--format", "cnndm", "--input", f"{FIXTURES}/cnndm", "--output", out, "--splits", "test",
            "--spm-model", tmp_path / "spm.model")  # fmt: skip
    (source,), (target,) = read(out, "test")
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "spm.model"))
    assert source.split() == processor.encode(BAKERY_ARTICLE, out_type=str)
    assert len(source.split()) < len(BAKERY_ARTICLE)  # pieces, not characters
    sentences = target.split(" <q> ")  # the separator is written as its own token
    assert [processor.decode(s.split()) for s in sentences] == list(BAKERY_HIGHLIGHTS)
