"""The client's image items: data URLs, and the oldest deleted first within the budget."""

from __future__ import annotations

from duplex_client.client.image_items import MAX_IMAGE_BYTES, MAX_IMAGES, ImageItems, data_url

PNG = b"\x89PNG\r\n\x1a\n" + bytes(8)


def test_data_urls_name_the_image_type() -> None:
    assert data_url(PNG).startswith("data:image/png;base64,iVBORw0KGgo")
    assert data_url(b"\xff\xd8\xff\xe0").startswith("data:image/jpeg;base64,/9j/")


def test_upstreams_budget_is_eight_images_or_4_mib() -> None:
    assert (MAX_IMAGES, MAX_IMAGE_BYTES) == (8, 4 * 1024 * 1024)


def test_the_oldest_go_first_past_the_count_or_the_bytes() -> None:
    items = ImageItems(max_images=3, max_bytes=100)
    items.in_session("s1")
    for n, size in enumerate((30, 30, 30)):
        assert items.make_room(size) == []
        items.added(f"i{n}", size)
    assert items.make_room(10) == ["i0"]  # a fourth image: one goes
    items.added("i3", 10)
    assert items.make_room(80) == ["i1", "i2"]  # bytes: 30 + 10 + 80 > 100
    items.added("i4", 80)
    assert (items.sent, items.deleted) == (5, 3)


def test_a_new_session_holds_none_of_the_old_items() -> None:
    items = ImageItems(max_images=1)
    items.in_session("s1")
    items.added("i0", 10)
    items.in_session("s1")
    assert items.make_room(10) == ["i0"]
    items.added("i1", 10)
    items.in_session("s2")  # after a journal gap: nothing of s1 is there to delete
    assert items.make_room(10) == []
