"""A toy sentence-pair task (the label depends on keywords in the second sentence) and its binarized form,
for the sentence-prediction tests and the GLUE config's run."""

import random

from .cli import preprocess

WORDS = [f"w{i}" for i in range(30)]
KEYWORDS = WORDS[:5]  # the label depends on these appearing in the SECOND sentence
FILLER = WORDS[5:]


def write_pair_task(folder, regression=False, seed=0):
    """Class "yes" when the second sentence holds a keyword, else "no"; regression: 1.5 per keyword."""
    rng = random.Random(seed)
    for split, n in (("train", 1200), ("valid", 100)):
        with open(folder / f"{split}.input0", "w") as a, open(folder / f"{split}.input1", "w") as b, open(
            folder / f"{split}.label", "w"
        ) as label:
            for _ in range(n):
                first = rng.choices(FILLER, k=rng.randint(4, 8))
                second = rng.choices(FILLER, k=rng.randint(4, 6))
                hits = rng.choice([0, 1, 2]) if regression else rng.choice([0, 1])
                for position in rng.sample(range(len(second)), hits):
                    second[position] = rng.choice(KEYWORDS)
                a.write(" ".join(first) + "\n")
                b.write(" ".join(second) + "\n")
                label.write(f"{1.5 * hits}\n" if regression else ("yes\n" if hits else "no\n"))


def binarize(folder, srcdict=None, task_args=(), regression=False):
    dest = folder / "bin"
    for name in ("input0", "input1"):
        dictionary = srcdict or (dest / "input0" / "dict.txt" if name == "input1" else None)
        preprocess(["--only-source", *task_args, "--trainpref", str(folder / f"train.{name}"),
                    "--validpref", str(folder / f"valid.{name}"),
                    "--destdir", str(dest / name), "--workers", "1",
                    *(["--srcdict", str(dictionary)] if dictionary else [])])  # fmt: skip
    if regression:
        (dest / "label").mkdir()
        for split in ("train", "valid"):
            (dest / "label" / f"{split}.label").write_text((folder / f"{split}.label").read_text())
    else:
        preprocess(["--only-source", "--trainpref", str(folder / "train.label"),
                    "--validpref", str(folder / "valid.label"), "--destdir", str(dest / "label"),
                    "--workers", "1"])  # fmt: skip
    return dest
