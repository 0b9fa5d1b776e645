"""Shared fixtures: a fake OpenML server for the real openml package."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isvm.data.bundled import BUNDLED_DIR, read_bundled
from isvm.data.registry import get_spec

# The real openml package runs end to end; only its two network calls are replaced:
# requests.Session.get (description XML, ARFF) and minio.Minio.fget_object (parquet).
# What they serve is built from the bundled bytes: the ARFF files verbatim (Abalone's
# target renamed as OpenML names it), the other formats as OpenML-style parquet files.

_ARFF_URL = "https://api.openml.org/data/v1/download/{id}/{name}.arff"
_PQ_URL = "https://data.openml.org/datasets/0000/{id:04d}/dataset_{id}.pq"


def _description(spec, *, arff_md5=None, parquet=False, ignore=()) -> str:
    extra = "".join(f"<oml:ignore_attribute>{c}</oml:ignore_attribute>" for c in ignore)
    if parquet:
        extra += f"<oml:parquet_url>{_PQ_URL.format(id=spec.openml_id)}</oml:parquet_url>"
    if arff_md5:
        extra += f"<oml:md5_checksum>{arff_md5}</oml:md5_checksum>"
    return (
        '<oml:data_set_description xmlns:oml="http://openml.org/openml">'
        f"<oml:id>{spec.openml_id}</oml:id><oml:name>{spec.name}</oml:name>"
        "<oml:version>1</oml:version><oml:format>ARFF</oml:format>"
        f"<oml:url>{_ARFF_URL.format(id=spec.openml_id, name=spec.name)}</oml:url>"
        f"<oml:file_id>{spec.openml_id}</oml:file_id>"
        f"<oml:default_target_attribute>{spec.openml_target}</oml:default_target_attribute>"
        f"{extra}<oml:visibility>public</oml:visibility><oml:status>active</oml:status>"
        "</oml:data_set_description>"
    )


def _openml_frame(spec) -> tuple[pd.DataFrame, list[str]]:
    """The bundled table laid out as OpenML serves it: features, then the target as a category."""
    table = read_bundled(spec)
    df = table.features.copy()
    ignore = []
    if spec.name == "dna":  # OpenML's DNA features are nominal {0, 1}
        df = df.astype(str).astype("category")
    if spec.name == "yeast":  # an identifier column that OpenML marks as ignored
        df.insert(0, "Sequence_name", [f"P{i}" for i in range(len(df))])
        ignore = ["Sequence_name"]
    labels = table.labels.to_numpy()
    if spec.name == "glass":  # OpenML uses Weka's names for the glass types
        names = {code: text for text, code in spec.label_aliases.items()}
        labels = np.array([names[str(v)] for v in labels])
    df[spec.openml_target] = pd.Categorical([str(v) for v in labels])
    return df, ignore


class FakeOpenML:
    """Serves OpenML's description, ARFF and parquet responses from the bundled snapshot."""

    def __init__(self, tmp_path: Path):
        self.dir = tmp_path / "served"
        self.dir.mkdir()
        self.texts: dict[str, bytes] = {}
        self.objects: dict[str, Path] = {}
        self.requests: list[str] = []

    def add(self, name: str, *, drop_rows: int = 0) -> None:
        import openml

        spec = get_spec(name)
        desc_url = f"{openml.config.server.rstrip('/')}/data/{spec.openml_id}"
        if spec.bundled_format == "arff" and not drop_rows:
            text = (BUNDLED_DIR / spec.bundled_files[0].path).read_bytes()
            if name == "abalone":
                text = text.replace(b"'Class_Rings'", b"'Class_number_of_rings'")
            url = _ARFF_URL.format(id=spec.openml_id, name=name)
            self.texts[url] = text
            md5 = hashlib.md5(text).hexdigest()
            self.texts[desc_url] = _description(spec, arff_md5=md5).encode()
        else:
            df, ignore = _openml_frame(spec)
            path = self.dir / f"dataset_{spec.openml_id}.pq"
            df.iloc[: len(df) - drop_rows].to_parquet(path)
            self.objects[f"datasets/0000/{spec.openml_id:04d}/dataset_{spec.openml_id}.pq"] = path
            self.texts[desc_url] = _description(spec, parquet=True, ignore=ignore).encode()

    def get(self, session, url, params=None, headers=None, **kwargs):
        import requests

        self.requests.append(url)
        response = requests.Response()
        response.url, response.encoding = url, "utf-8"
        response.headers["Content-Encoding"] = "gzip"
        if url in self.texts:
            response.status_code, response._content = 200, self.texts[url]
        else:
            response.status_code = 412
            response._content = (
                b'<oml:error xmlns:oml="http://openml.org/openml"><oml:code>111</oml:code>'
                b"<oml:message>Unknown dataset</oml:message></oml:error>"
            )
        return response

    def fget_object(self, bucket_name: str, object_name: str, file_path: str) -> None:
        self.requests.append(f"minio:{bucket_name}/{object_name}")
        shutil.copyfile(self.objects[f"{bucket_name}/{object_name}"], file_path)


@pytest.fixture
def fake_openml(tmp_path, monkeypatch):
    pytest.importorskip("openml", reason="the openml package is not installed")
    import minio
    import requests

    fake = FakeOpenML(tmp_path)
    monkeypatch.setattr(requests.Session, "get", lambda s, url, **kw: fake.get(s, url, **kw))
    monkeypatch.setattr(
        minio.Minio,
        "fget_object",
        lambda client, bucket_name, object_name, file_path, **kw: fake.fget_object(
            bucket_name, object_name, file_path
        ),
    )
    return fake
