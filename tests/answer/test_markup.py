"""Plain text for people: what beleg.markup.plain keeps and what it drops."""

from __future__ import annotations

import pytest

from beleg.answer.types import Citation
from beleg.cli.render import Style, render_hits
from beleg.markup import plain, table_cells, table_row, unwrap_blocks
from beleg.types import Hit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("See [the guide](https://example.org/guide) now.", "See the guide now."),
        ('See [Installation]({{% relref "install/linux.md" %}}) first.', "See Installation first."),
        ("See [Installation]({{< ref \"install.md#step-2\" >}}).", "See Installation."),
        ("![Diagram of the flow](img/flow.png) Caption.", "Diagram of the flow Caption."),
        ("Read [the docs][docs] and **bold**, *it*, __strong__, _em_, ~~old~~.",
         "Read the docs and bold, it, strong, em, old."),
        ("## Configure the `port`", "Configure the `port`"),
        ("{{% notice info %}}The variable is now called `IOB_NEW`.{{% /notice %}}",
         "The variable is now called `IOB_NEW`."),
        ("{{< figure src=\"a.png\" >}}Hallo {% raw %}Welt{% endraw %}", "Hallo Welt"),
        ("Line<br>next &amp; <b>bold</b> &lt;tag&gt; <!-- hidden -->done", "Line\nnext & bold <tag> done"),
        ("> Quoted **text**\n> more", "Quoted text\nmore"),
        ("Set `a_b*c*` and keep snake_case_name.", "Set `a_b*c*` and keep snake_case_name."),
        ("Escaped \\*star\\* stays.", "Escaped *star* stays."),
        ("Cite [S1][S2] as written.", "Cite [S1][S2] as written."),
        ("mailcow[^1]: dockerized is a suite.\n\n[^1]: Not affiliated with Docker.",
         "mailcow: dockerized is a suite.\n\nNot affiliated with Docker."),
        (":::tip Pro tip\nUse **bold** here.\n:::", "Pro tip\nUse bold here."),
        ("::: warning\nCareful.\n:::", "Careful."),
        ("> [!NOTE]\n> Read this first.", "Read this first."),
        ("?> Damit die Doku schnell ist.\n!> **Achtung** wichtig", "Damit die Doku schnell ist.\nAchtung wichtig"),
        ("Text with ?> inside and a :: b.", "Text with ?> inside and a :: b."),
    ],
)
def test_plain_drops_markup_and_keeps_words(text: str, expected: str) -> None:
    assert plain(text) == expected


def test_fenced_code_keeps_its_lines_without_fences_and_without_touching_markup_inside() -> None:
    text = "Run:\n\n```bash\nsudo  apt install *iobroker*\n# not a heading\n```"
    assert plain(text) == "Run:\n\nsudo  apt install *iobroker*\n# not a heading"


def test_admonitions_and_content_tabs_show_their_title_and_an_unindented_body() -> None:
    text = ('Intro.\n\n!!! warning "Achtung"\n    Installieren Sie **nicht** auf einem NAS.\n\n'
            "    ??? note\n        Nested body.\n\n            indented code in the nested body\n\n"
            'Back at the top.\n\n=== "docker compose (Plugin)"\n\n    ```\n    docker compose up -d\n    ```\n'
            "Title\n===\n")
    assert plain(text) == ("Intro.\n\nAchtung\nInstallieren Sie nicht auf einem NAS.\n\nNested body.\n\n"
                           "    indented code in the nested body\n\nBack at the top.\n\ndocker compose (Plugin)\n\n"
                           "docker compose up -d\n\nTitle")
    # Under the opener, prose indented four spaces is the admonition's body, not a code block.
    assert unwrap_blocks("!!! example\n    As an example, take the subnet.") == "\nAs an example, take the subnet."
    assert unwrap_blocks("Plain text\n    indented code") == "Plain text\n    indented code"


def test_table_rows_are_named_by_their_header() -> None:
    text = "| Setting | Default |\n|:--|--:|\n| port | 8081 |\n| host | `0.0.0.0` |"
    assert plain(text) == "Setting: port; Default: 8081\nSetting: host; Default: `0.0.0.0`"


def test_table_row_helpers() -> None:
    assert table_cells("| a | b \\| c |  |") == ["a", "b \\| c", ""]
    assert table_row("| Name | Value |", "| x | |") == "Name: x"
    assert table_row(None, "| x | y |") == "x; y"
    assert table_row("| only one |", "| x | y |") == "x; y"  # counts differ: values only


def test_citation_json_has_display_next_to_the_exact_quote() -> None:
    quote = "Use [the CLI]({{% relref \"cli.md\" %}}) with **care**."
    data = Citation("S1", "c", "d", "a.md", quote, 10, 10 + len(quote), True).to_json()
    assert data["quote"] == quote and data["display"] == "Use the CLI with care."
    assert data["offsets"] == "document-text"
    assert Citation("S1", "c", "d", "a.md", "| a |", 0, 5, True, display="H: a").to_json()["display"] == "H: a"


def test_search_snippets_show_no_markup() -> None:
    text = ("{{% notice warning %}}Install the **adapter** via [the admin]({{% relref \"admin.md\" %}})."
            "{{% /notice %}}")
    hit = Hit("c1", "d1", "a.md", "A", ("A",), 0, len(text), 1.0, text, {"language": "en"})
    out = render_hits([hit], "adapter", Style(False))
    assert "Install the «adapter» via the admin." in out
    assert "{{" not in out and "**" not in out and "](" not in out
