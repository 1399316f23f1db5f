#!/usr/bin/env python3
"""Materialise the ioBroker documentation corpus at a pinned commit (the realdocs benchmark).

The corpus is a deterministic selection from https://github.com/ioBroker/ioBroker.docs
(Markdown, German originals with machine translations to English, adapter READMEs mostly
written in English). Nothing of it is committed here; this script rebuilds it:

    python benchmarks/realdocs/fetch_iobroker.py --git-dir /path/to/ioBroker.docs.git
    python benchmarks/realdocs/fetch_iobroker.py            # git clone (network needed)

Selection rule (all of it is in this file, so anyone gets the same files):

* core pages: ``docs/{en,de}/README.md`` and every ``*.md`` under ``docs/{en,de}/<section>/``
  for the sections in ``CORE_SECTIONS``, in both languages (the English ones are mostly
  machine translations of the German ones; both are kept, as a bilingual site has them);
* adapters: ``docs/{en,de}/adapterref/iobroker.<name>/README.md`` for the adapters in
  ``ADAPTERS``, *only in the language(s) the page was written in*: a page whose front matter
  says ``translatedFrom`` is a machine translation and is left out. Most adapters are then
  English-only, a few German-only, which is what makes cross-lingual questions real;
* adapter pages lose their changelog section (from a "Changelog" heading to the next heading
  of the same or a higher level; the licence after it stays): the release notes of every
  version are more than half of the adapter text and would be half the index;
* left out everywhere: placeholder pages (under ``PLACEHOLDER_MAX_CHARS`` characters that say
  "Dies ist ein Platzhalter" / "This is a wildcard") and pages with under ``MIN_BODY_CHARS`` characters of text.

Each file is written to ``<out>/<lang>/<rest of the path>`` (``docs/`` dropped) with its
original front matter plus ``language`` (from the path), ``product: iobroker``,
``section``, ``adapter`` (adapter pages), ``upstream_path`` and ``upstream_commit``; a
machine-translated core page keeps ``translatedFrom``. The body is the upstream body
byte for byte, less an adapter page's changelog. ``<out>/MANIFEST.json`` lists the files and their upstream blob ids.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pinned_git
import yaml
from pinned_git import list_markdown, read_blobs, write_manifest, write_page

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / ".cache" / "realdocs" / "iobroker"
UPSTREAM_URL = "https://github.com/ioBroker/ioBroker.docs.git"
#: master of ioBroker.docs on 2021-07-19 ("GitHub Action: Add changes"). Pinned: the
#: documentation changes daily, and the gold answers are copied from this state.
COMMIT = "725ca55654e2b189d7292c29ca6cc33880a3b418"
LANGUAGES = ("en", "de")
CORE_SECTIONS = ("admin", "basics", "cloud", "community", "config", "dev", "downloads", "faq", "install",
                 "intro", "lib", "logic", "trouble", "tutorial", "viz")
#: Widely used adapters (storage, scripting, visualisation, protocols, popular devices): a
#: bounded sample of the ~420 adapter pages, chosen by use, not by how well Beleg does on them.
ADAPTERS = (
    "accuweather", "admin", "alarm", "alexa2", "alias-manager", "asterisk", "backitup", "calendar", "chromecast",
    "cloud", "daikin", "daswetter", "deconz", "denon", "device-reminder", "discovery", "dwd", "echarts", "email",
    "esphome", "fb-checkpresence", "feiertage", "flot", "fritzbox", "fritzdect", "geofency", "harmony",
    "heatingcontrol", "history", "hm-rega", "hm-rpc", "hmip", "homeconnect", "hs100", "hue", "ical", "influxdb",
    "info", "iot", "iqontrol", "javascript", "knx", "kodi", "lametric", "lgtv", "linkeddevices", "lovelace",
    "luftdaten", "material", "meross", "mihome", "mihome-vacuum", "milight", "miio", "modbus", "mqtt",
    "mqtt-client", "nanoleaf-lightpanels", "net-tools", "netatmo", "node-red", "nuki-extended", "nut",
    "openweathermap", "owntracks", "pi-hole", "ping", "pollenflug", "proxmox", "pushover", "radar2", "rflink",
    "rfxcom", "ring", "roomba", "rpi2", "s7", "samsung", "sayit", "scenes", "shelly", "shuttercontrol",
    "simple-api", "sma-em", "smartmeter", "snmp", "socketio", "sonoff", "sonos", "sourceanalytix",
    "spotify-premium", "sql", "squeezeboxrpc", "statistics", "synology", "tado", "tankerkoenig", "telegram",
    "text2command", "tr-064", "tradfri", "trashschedule", "tuya", "unifi", "upnp", "vis", "web",
    "whatsapp-cmb", "wled", "worx", "yahka", "yamaha", "yeelight-2", "zigbee", "zwave2",
)
MIN_BODY_CHARS = 200
#: A page that says it is a placeholder and has less text than this is only the placeholder
#: box (~250 characters) and a heading; longer ones have real sections besides one stub.
PLACEHOLDER_MAX_CHARS = 800
PLACEHOLDER = re.compile(r"Dies ist ein Platzhalter|This is a wildcard|This is a placeholder", re.IGNORECASE)
FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
FRONT_MATTER_LINE = re.compile(r"^([A-Za-z_][\w-]*):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
CHANGELOG_HEADING = re.compile(r"^(change ?log|Änderungsprotokoll)\b", re.IGNORECASE)
FENCE = re.compile(r"^[ \t]*(```|~~~)")


@dataclass(frozen=True, slots=True)
class Page:
    upstream_path: str  # docs/de/install/nodejs.md
    blob: str
    language: str
    section: str
    adapter: str | None

    @property
    def corpus_path(self) -> str:  # de/install/nodejs.md
        return self.upstream_path.removeprefix("docs/")


# ---------------------------------------------------------------------- selection
def candidate(path: str, blob: str) -> Page | None:
    """The page for ``path`` if the path rule selects it (content rules come later)."""
    parts = path.split("/")  # docs, lang, section, ...
    if len(parts) < 3 or parts[1] not in LANGUAGES:
        return None
    lang = parts[1]
    if len(parts) == 3:
        return Page(path, blob, lang, "home", None) if parts[2] == "README.md" else None
    section = parts[2]
    if section in CORE_SECTIONS:
        return Page(path, blob, lang, section, None)
    if section == "adapterref" and len(parts) == 5 and parts[4] == "README.md":
        name = parts[3].removeprefix("iobroker.")
        if parts[3].startswith("iobroker.") and name in ADAPTERS:
            return Page(path, blob, lang, "adapterref", name)
    return None


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    m = FRONT_MATTER.match(text)
    if not m:
        return {}, text
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        meta = None
    if not isinstance(meta, dict):
        # The translation bot writes values like "title: TR: ioBroker.alexa2", which YAML
        # rejects; every line is still "key: value", so read it that way.
        meta = dict(FRONT_MATTER_LINE.findall(m.group(1)))
    return meta, text[m.end():]


def reason_to_skip(page: Page, meta: dict[str, Any], body: str) -> str | None:
    if page.adapter and meta.get("translatedFrom"):
        return f"machine translation from {meta['translatedFrom']}"
    if PLACEHOLDER.search(body) and len(body.strip()) < PLACEHOLDER_MAX_CHARS:
        return "placeholder page"
    if len(body.strip()) < MIN_BODY_CHARS:
        return f"under {MIN_BODY_CHARS} characters of text"
    return None


def without_changelog(body: str) -> str:
    """``body`` less its changelog section (headings inside code fences do not count)."""
    out: list[str] = []
    cut_level = 0  # > 0 while inside a changelog section of that heading level
    in_fence = False
    for line in body.splitlines(keepends=True):
        if FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else HEADING.match(line.rstrip("\r\n"))
        if m:
            level = len(m.group(1))
            if cut_level and level <= cut_level:
                cut_level = 0
            if not cut_level and CHANGELOG_HEADING.match(m.group(2)):
                cut_level = level
        if not cut_level:
            out.append(line)
    return "".join(out)


def front_matter(page: Page, meta: dict[str, Any]) -> dict[str, Any]:
    """Upstream front matter (without its editing bookkeeping) plus the corpus metadata."""
    keep = {k: v for k, v in meta.items() if k not in ("editLink", "hash", "translatedWarning")}
    for key in ("lastChanged", "title"):  # dates like 16.07.2019 as plain strings
        if key in keep:
            keep[key] = str(keep[key])
    keep.update({"language": page.language, "product": "iobroker", "section": page.section,
                 "upstream_path": page.upstream_path, "upstream_commit": COMMIT})
    if page.adapter:
        keep["adapter"] = page.adapter
    return keep


def materialise(git_dir: Path, out: Path) -> dict[str, Any]:
    rows = list_markdown(git_dir, UPSTREAM_URL, COMMIT, [f"docs/{lang}" for lang in LANGUAGES])
    pages = [p for p in (candidate(path, blob) for path, blob in rows) if p]
    contents = read_blobs(git_dir, sorted({p.blob for p in pages}), COMMIT)
    if out.exists():
        shutil.rmtree(out)
    kept, skipped = [], {}
    for page in sorted(pages, key=lambda p: p.upstream_path):
        text = contents[page.blob].decode("utf-8", errors="replace")
        meta, body = split_front_matter(text)
        why = reason_to_skip(page, meta, body)
        if why:
            skipped[page.upstream_path] = why
            continue
        if page.adapter:
            body = without_changelog(body)
        write_page(out, page.corpus_path, front_matter(page, meta), body)
        kept.append({"path": page.corpus_path, "upstream_path": page.upstream_path, "blob": page.blob,
                     "language": page.language, "section": page.section, "adapter": page.adapter})
    manifest = {"repository": UPSTREAM_URL, "commit": COMMIT, "files": len(kept),
                "by_language": {lang: sum(1 for k in kept if k["language"] == lang) for lang in LANGUAGES},
                "adapters": sum(1 for k in kept if k["adapter"]), "pages": kept, "skipped": skipped}
    return write_manifest(out, manifest)


def summary(m: dict[str, Any]) -> str:
    return (f"{m['files']} files at {m['commit'][:12]} ({m['by_language']}, {m['adapters']} adapter pages; "
            f"{len(m['skipped'])} left out)")


if __name__ == "__main__":
    sys.exit(pinned_git.fetch_main(sys.modules[__name__]))
