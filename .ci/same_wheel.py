"""The wheel built from the sdist holds the same files, byte for byte, as the wheel built from
the tree (the RECORD aside, whose line order may differ): the sdist ships everything."""

import hashlib
import sys
import zipfile


def contents(path: str) -> dict[str, str]:
    with zipfile.ZipFile(path) as wheel:
        return {
            name: hashlib.sha256(wheel.read(name)).hexdigest()
            for name in wheel.namelist()
            if not name.endswith(".dist-info/RECORD")
        }


from_sdist, from_tree = contents(sys.argv[1]), contents(sys.argv[2])
if from_sdist != from_tree:
    only = sorted(set(from_sdist) ^ set(from_tree))
    changed = sorted(n for n in set(from_sdist) & set(from_tree) if from_sdist[n] != from_tree[n])
    sys.exit(f"the sdist builds another wheel: only in one {only}, changed {changed}")
needed = ("shared/cli/report.html.j2", "shared/analysis/data/summeval/dev.jsonl")
missing = [name for name in needed if name not in from_sdist]
if missing:
    sys.exit(f"the wheel lacks {missing}")
print(f"same wheel from the sdist and the tree: {len(from_sdist)} files")
