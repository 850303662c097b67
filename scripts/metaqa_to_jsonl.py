#!/usr/bin/env python3
"""Convert the MetaQA movie KB (``subject|relation|object`` lines) to kgsearch JSONL.

Every triple's head is a movie; the tail's type follows from the relation (see
``TAIL_TYPES``). The output has one object per (type, name), objects first, then one
relationship per unique triple. Records look like::

    {"kind": "object", "type": "Movie", "key": "Kismet", "properties": {...},
     "tags": [], "labels": []}
    {"kind": "relationship", "type": "directed_by",
     "source": {"type": "Movie", "key": "Kismet"},
     "target": {"type": "Person", "key": "William Dieterle"}}

Two modes:

* ``--full OUT`` converts the whole KB.
* ``--sample OUT --movies N --seed S`` writes a deterministic slice of N movies that
  always contains the movies whose names also name an entity of another type (such as
  "Jesse James", a film and a person), plus one movie referencing each of those other
  entities, so both sides of every same-name case are present.

Standard library only. Data: MetaQA (Zhang et al., AAAI 2018), CC BY 3.0.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

DEFAULT_KB = Path("/work/shared/eval-data/metaqa/kb.txt")
DEFAULT_MOVIES = 1500
DEFAULT_SEED = 7
DEFAULT_SAME_NAME_LIMIT = 50

MOVIE = "Movie"

#: Object type of a triple's tail, by relation. The head is always a Movie.
TAIL_TYPES: dict[str, str] = {
    "directed_by": "Person",
    "written_by": "Person",
    "starred_actors": "Person",
    "release_year": "Year",
    "in_language": "Language",
    "has_tags": "Tag",
    "has_genre": "Genre",
    "has_imdb_votes": "Votes",
    "has_imdb_rating": "Rating",
}

#: Order in which object types are written (objects within a type are sorted by name).
TYPE_ORDER: tuple[str, ...] = (
    MOVIE,
    "Person",
    "Genre",
    "Language",
    "Year",
    "Rating",
    "Votes",
    "Tag",
)

#: Cap on list-valued descriptive properties that can be long.
PROPERTY_CAP = 3

Triple = tuple[str, str, str]
ObjKey = tuple[str, str]  # (type, name)


def read_triples(lines: Iterable[str]) -> list[Triple]:
    """Parse ``subject|relation|object`` lines, dropping exact duplicates (first kept).

    Blank lines are skipped. A line without exactly three non-empty fields, or with an
    unknown relation, raises ``ValueError`` naming the line number.
    """
    seen: dict[Triple, None] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise ValueError(f"line {number}: expected 'subject|relation|object', got {line!r}")
        head, relation, tail = parts
        if relation not in TAIL_TYPES:
            raise ValueError(f"line {number}: unknown relation {relation!r}")
        seen.setdefault((head, relation, tail), None)
    return list(seen)


def load_kb(path: Path) -> list[Triple]:
    """Read and deduplicate the triples of a kb.txt file."""
    with path.open(encoding="utf-8") as handle:
        return read_triples(handle)


def tail_type(relation: str) -> str:
    """The object type of a triple's tail."""
    return TAIL_TYPES[relation]


def entity_types(triples: Iterable[Triple]) -> dict[str, set[str]]:
    """Every name → the set of object types it takes in ``triples``."""
    types: dict[str, set[str]] = defaultdict(set)
    for head, relation, tail in triples:
        types[head].add(MOVIE)
        types[tail].add(tail_type(relation))
    return dict(types)


def movie_properties(name: str, triples: Iterable[Triple]) -> dict[str, Any]:
    """Compact descriptive properties of one movie from its own triples (KB order).

    Keys, in this order and only when there is a value: ``name``; ``release_year``
    (string, the first if several); ``language`` (string, or list if several);
    ``genre`` (list); ``directed_by`` and ``starred_actors`` (lists of at most
    ``PROPERTY_CAP`` names).
    """
    values: dict[str, list[str]] = defaultdict(list)
    for head, relation, tail in triples:
        if head == name and tail not in values[relation]:
            values[relation].append(tail)
    props: dict[str, Any] = {"name": name}
    if values["release_year"]:
        props["release_year"] = values["release_year"][0]
    languages = values["in_language"]
    if languages:
        props["language"] = languages[0] if len(languages) == 1 else list(languages)
    if values["has_genre"]:
        props["genre"] = list(values["has_genre"])
    for relation in ("directed_by", "starred_actors"):
        if values[relation]:
            props[relation] = values[relation][:PROPERTY_CAP]
    return props


def object_record(obj_type: str, name: str, properties: dict[str, Any]) -> dict[str, Any]:
    """One ``kind: object`` JSONL record."""
    return {
        "kind": "object",
        "type": obj_type,
        "key": name,
        "properties": properties,
        "tags": [],
        "labels": [],
    }


def relationship_record(triple: Triple) -> dict[str, Any]:
    """One ``kind: relationship`` JSONL record for a triple."""
    head, relation, tail = triple
    return {
        "kind": "relationship",
        "type": relation,
        "source": {"type": MOVIE, "key": head},
        "target": {"type": tail_type(relation), "key": tail},
    }


def _type_rank(obj_type: str) -> int:
    return TYPE_ORDER.index(obj_type) if obj_type in TYPE_ORDER else len(TYPE_ORDER)


def convert(triples: Sequence[Triple]) -> Iterator[dict[str, Any]]:
    """All JSONL records for ``triples``: objects (by type, then name), then relationships.

    Triples are deduplicated again here, so callers may pass raw lists.
    """
    unique = list(dict.fromkeys(triples))
    by_movie: dict[str, list[Triple]] = defaultdict(list)
    objects: set[ObjKey] = set()
    for triple in unique:
        head, relation, tail = triple
        by_movie[head].append(triple)
        objects.add((MOVIE, head))
        objects.add((tail_type(relation), tail))
    for obj_type, name in sorted(objects, key=lambda o: (_type_rank(o[0]), o[0], o[1])):
        props = movie_properties(name, by_movie[name]) if obj_type == MOVIE else {"name": name}
        yield object_record(obj_type, name, props)
    for triple in unique:
        yield relationship_record(triple)


def same_name_movies(triples: Sequence[Triple], limit: int) -> list[str]:
    """Movies whose name is also an entity of another type, sorted, at most ``limit``."""
    types = entity_types(triples)
    names = sorted(n for n, ts in types.items() if MOVIE in ts and len(ts) > 1)
    return names[:limit]


def partner_movies(triples: Sequence[Triple], names: Iterable[str]) -> list[str]:
    """For each name and each non-Movie type it takes, one movie whose triple has it as tail.

    The alphabetically first such movie is chosen, so the other-typed object (e.g. the
    Person "Jesse James") is present in a slice. Returns sorted, unique movie names.
    """
    wanted = set(names)
    first: dict[ObjKey, str] = {}
    for head, relation, tail in triples:
        if tail in wanted:
            key = (tail_type(relation), tail)
            if key not in first or head < first[key]:
                first[key] = head
    return sorted(set(first.values()))


def select_movies(
    triples: Sequence[Triple], movies: int, seed: int, same_name_limit: int
) -> list[str]:
    """Deterministic movie slice: forced same-name movies and partners, then random fill.

    The forced movies count toward ``movies``; if they alone exceed it, all of them are
    kept anyway. The fill draws from the remaining movies (sorted) with
    ``random.Random(seed).sample``. Returns sorted names.
    """
    all_movies = sorted({h for h, _, _ in triples})
    same = same_name_movies(triples, same_name_limit)
    forced = set(same) | set(partner_movies(triples, same))
    rest = [m for m in all_movies if m not in forced]
    fill = max(0, min(movies - len(forced), len(rest)))
    chosen = forced | set(random.Random(seed).sample(rest, fill))
    return sorted(chosen)


def slice_triples(triples: Sequence[Triple], movies: Iterable[str]) -> list[Triple]:
    """All triples (KB order) whose head is one of ``movies``."""
    keep = set(movies)
    return [t for t in triples if t[0] in keep]


def write_jsonl(
    records: Iterable[dict[str, Any]], out: TextIO
) -> tuple[Counter[str], Counter[str]]:
    """Write records one per line; return (objects per type, relationships per type)."""
    objects: Counter[str] = Counter()
    relationships: Counter[str] = Counter()
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False))
        out.write("\n")
        if record["kind"] == "object":
            objects[record["type"]] += 1
        else:
            relationships[record["type"]] += 1
    return objects, relationships


def _write_file(path: Path, records: Iterable[dict[str, Any]]) -> tuple[Counter[str], Counter[str]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        return write_jsonl(records, handle)


def _report(path: Path, objects: Counter[str], relationships: Counter[str], seconds: float) -> None:
    print(f"wrote {path} ({path.stat().st_size:,} bytes) in {seconds:.2f}s")
    print(f"objects: {sum(objects.values()):,}")
    for obj_type, count in sorted(objects.items(), key=lambda kv: (_type_rank(kv[0]), kv[0])):
        print(f"  {obj_type}: {count:,}")
    print(f"relationships: {sum(relationships.values()):,}")
    for rel_type, count in sorted(relationships.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {rel_type}: {count:,}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=(
            "Convert the MetaQA movie KB (subject|relation|object lines) to kgsearch JSONL.\n"
            "Writes one object per (type, name), then one relationship per unique triple.\n"
            "Heads are Movies; a tail's type comes from its relation:\n"
            "  directed_by, written_by, starred_actors -> Person   release_year -> Year\n"
            "  in_language -> Language   has_genre -> Genre   has_tags -> Tag\n"
            "  has_imdb_votes -> Votes   has_imdb_rating -> Rating\n"
            "Movie objects also get properties name, release_year, language, genre,\n"
            f"directed_by and starred_actors (lists capped at {PROPERTY_CAP})."
        ),
        epilog=(
            "Examples:\n"
            "  python scripts/metaqa_to_jsonl.py --full /tmp/metaqa-full.jsonl\n"
            "  python scripts/metaqa_to_jsonl.py --sample data/sample/metaqa-movies.jsonl "
            "--movies 1500 --seed 7"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kb",
        type=Path,
        default=DEFAULT_KB,
        help=f"input kb.txt (default: {DEFAULT_KB})",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--full", type=Path, metavar="OUT.jsonl", help="convert the whole KB")
    mode.add_argument(
        "--sample",
        type=Path,
        metavar="OUT.jsonl",
        help=(
            "write a slice: --movies movies with all their triples and the objects those "
            "triples reference; always includes movies sharing a name with another type"
        ),
    )
    parser.add_argument(
        "--movies",
        type=int,
        default=DEFAULT_MOVIES,
        help=(
            f"--sample only: total movies in the slice, forced same-name movies included "
            f"(default: {DEFAULT_MOVIES})"
        ),
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"--sample only: seed for random.Random (default: {DEFAULT_SEED})",
    )
    parser.add_argument(
        "--same-name-limit",
        type=int,
        default=DEFAULT_SAME_NAME_LIMIT,
        help=(
            "--sample only: at most this many same-name movies are forced in, taken in name "
            f"order (default: {DEFAULT_SAME_NAME_LIMIT})"
        ),
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.movies < 0 or args.same_name_limit < 0:
        print("error: --movies and --same-name-limit must be >= 0", file=sys.stderr)
        return 2
    started = time.perf_counter()
    triples = load_kb(args.kb)
    if args.full is not None:
        out: Path = args.full
        selected = triples
    else:
        out = args.sample
        movies = select_movies(triples, args.movies, args.seed, args.same_name_limit)
        selected = slice_triples(triples, movies)
    objects, relationships = _write_file(out, convert(selected))
    _report(out, objects, relationships, time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
