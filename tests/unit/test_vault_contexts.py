"""The vault's compression contexts: kept per thread and per dictionary, never shared or stale."""

from __future__ import annotations

import random
import threading

import zstandard

from postrun.store import dictionary
from postrun.store.dictionary import Compressor


def _prepared(content: bytes) -> zstandard.ZstdCompressionDict:
    prepared = zstandard.ZstdCompressionDict(content, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    prepared.precompute_compress(level=dictionary.LEVEL)
    return prepared


def _text(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    words = [
        f'"{rng.choice(["path", "command", "stdout", "text"])}": "{rng.getrandbits(40):x}"' for _ in range(size // 20)
    ]
    return ("{" + ", ".join(words) + "}").encode()[:size]


def _decompressed(prepared: zstandard.ZstdCompressionDict | None, data: bytes) -> bytes:
    plain = zstandard.ZstdDecompressor() if prepared is None else zstandard.ZstdDecompressor(dict_data=prepared)
    return plain.decompress(data)


def test_one_thread_switching_dictionaries_compresses_each_copy_with_its_own() -> None:
    first, second = _text(1, 200_000), _text(2, 200_000)
    a, b = _prepared(first), _prepared(second)
    compressors = [Compressor(a, "a"), Compressor(None, None), Compressor(b, "b")]
    copies = [first[:50_000], second[:50_000], first[:300_000] + second[:100_000]]  # the last past the reuse bound
    for _ in range(3):
        for compressor in compressors:
            for copy in copies:
                packed = compressor.compress(copy)
                assert _decompressed(compressor.prepared, packed) == copy
    # The dictionary is used each time the kept context is reused, not only the first.
    with_a = [len(Compressor(a, "a").compress(first[:50_000])) for _ in range(3)]
    alone = len(Compressor(None, None).compress(first[:50_000]))
    assert max(with_a) < alone / 10
    assert len(set(with_a)) == 1


def test_threads_compressing_at_once_each_use_a_context_of_their_own() -> None:
    content = _text(3, 200_000)
    prepared = _prepared(content)
    compressor = Compressor(prepared, "shared")
    failures: list[str] = []

    def work(seed: int) -> None:
        for index in range(60):
            copy = content[index * 1000 : index * 1000 + 20_000] + _text(seed * 100 + index, 5_000)
            try:
                same = _decompressed(prepared, compressor.compress(copy)) == copy
            except zstandard.ZstdError as exc:  # a context two threads used at once
                failures.append(f"thread {seed}, copy {index}: {exc}")
                continue
            if not same:
                failures.append(f"thread {seed}, copy {index}: decompressed to other bytes")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
