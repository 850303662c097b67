"""The Graph page by name in Chromium: a name that one object has opens its graph, a
name several share offers a picker, a name in the address (not an id) is read as a
name, edges show their type on hover, and "Find a node" keeps the neighbours in
view. Data: the seeded ``alpha`` project (tests/ui_browser.py)."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from ui_browser import LEAVES, Site, Watched, sign_in


def graph_ready(page: Page) -> None:
    page.wait_for_selector("#graph[data-ready='1']", timeout=20_000)


def viewport(page: Page, node: str) -> list[float]:
    xy: list[float] = page.evaluate(
        """id => { const v = window.KG.graphView;
                   const p = v.renderer.graphToViewport(v.graph.getNodeAttributes(id));
                   return [p.x, p.y]; }""",
        node,
    )
    return xy


def test_a_name_one_object_has_opens_its_graph(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash="#/graph")
    expect(page.locator("#graph-hint")).to_be_visible()
    page.fill("#seed", "acme corp")
    page.press("#seed", "Enter")
    graph_ready(page)
    assert f"#/graph/{site.ids['acme']}" in page.url
    expect(page.locator("#graph")).to_have_attribute("data-nodes", "2")


def test_a_shared_name_offers_a_picker(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash="#/graph")
    page.fill("#seed", "Leaf")
    page.press("#seed", "Enter")
    choices = page.locator("#picker button")
    expect(choices.first).to_be_visible()
    assert choices.count() >= 2
    expect(choices.first).to_contain_text("Leaf")
    tab.shot("graph-picker", doc=True)
    choices.first.click()
    graph_ready(page)
    expect(page.locator("#graph-status")).not_to_contain_text("Loading")


def test_a_name_in_the_address_is_read_as_a_name(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash="#/graph/Hub%20Topic")
    graph_ready(page)
    expect(page.locator("#graph")).to_have_attribute("data-nodes", str(1 + LEAVES))
    assert site.ids["hub"] in page.url


def test_an_unknown_name_says_so_with_no_loading_left(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash="#/graph/Nobody%20Atall")
    expect(page.locator("#picker-note")).to_have_text(
        "No object is named exactly “Nobody Atall”; the closest:"
    )
    expect(page.locator("#seed")).to_have_value("Nobody Atall")
    expect(page.locator("#graph-status")).to_have_count(0)
    expect(page.locator("#graph")).to_have_count(0)


def test_an_edge_shows_its_type_on_hover(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash=f"#/graph/{site.ids['acme']}")
    graph_ready(page)
    box = page.locator("#graph").bounding_box()
    assert box is not None
    ax, ay = viewport(page, site.ids["ada"])
    bx, by = viewport(page, site.ids["acme"])
    page.mouse.move(box["x"] + (ax + bx) / 2, box["y"] + (ay + by) / 2)
    expect(page.locator("#graph-status")).to_have_text("Ada Lovelace —WORKS FOR→ Acme Corp")
    tab.shot("graph-edge-hover", doc=True)


def test_find_a_node_keeps_its_neighbours_in_view(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash=f"#/graph/{site.ids['hub']}")
    graph_ready(page)
    page.fill("#find-node", "Leaf 7")
    page.press("#find-node", "Enter")
    expect(page.locator("#graph-info h2")).to_have_text("Leaf 7")
    page.wait_for_timeout(600)  # the camera's animation
    width, height = page.evaluate(
        "() => { const g = document.getElementById('graph');"
        " return [g.clientWidth, g.clientHeight]; }"
    )
    for node in (site.ids["hub"], site.ids["leaf7"]):
        x, y = viewport(page, node)
        assert 0 <= x <= width and 0 <= y <= height, (node, x, y, width, height)
    tab.shot("graph-find")
