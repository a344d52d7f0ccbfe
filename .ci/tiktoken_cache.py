"""Seed tiktoken's cache with o200k_base from bpe-openai's copy (same bytes: tiktoken checks the
sha256), so Ragas 0.4.2, which loads that vocabulary when imported, imports offline.

Usage: python .ci/tiktoken_cache.py DIR, then TIKTOKEN_CACHE_DIR=DIR."""

import gzip
import hashlib
import importlib.resources
import sys
from pathlib import Path

URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # tiktoken's own

packed = importlib.resources.files("bpe_openai.data") / "o200k_base.tiktoken.gz"
data = gzip.decompress(packed.read_bytes())
if hashlib.sha256(data).hexdigest() != SHA256:
    sys.exit("bpe-openai's o200k_base is not tiktoken's")
folder = Path(sys.argv[1])
folder.mkdir(parents=True, exist_ok=True)
(folder / hashlib.sha1(URL.encode()).hexdigest()).write_bytes(data)
