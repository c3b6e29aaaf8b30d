"""Dominant colour of a frame, from the named palette."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from duplex_client.server.engine.colors import (
    PALETTE,
    SWATCH_BGR,
    dominant_color,
    dominant_color_bgr,
    swatch_jpeg,
)


@pytest.mark.parametrize("name", PALETTE)
def test_each_swatch_is_named(name: str) -> None:
    assert dominant_color(swatch_jpeg(name)) == name
    assert dominant_color(swatch_jpeg(name, 640, 480)) == name


def test_png_frames_are_read_too() -> None:
    image = np.empty((40, 40, 3), np.uint8)
    image[:] = SWATCH_BGR["green"]
    ok, png = cv2.imencode(".png", image)
    assert ok
    assert dominant_color(png.tobytes()) == "green"


def test_mixed_grey_and_undecodable_frames_have_no_colour() -> None:
    half = np.empty((40, 80, 3), np.uint8)
    half[:, :40] = SWATCH_BGR["red"]
    half[:, 40:] = SWATCH_BGR["blue"]
    third = half.copy()
    third[:, 30:50] = SWATCH_BGR["green"]
    assert dominant_color_bgr(third) is None
    grey = np.full((40, 40, 3), 128, np.uint8)
    assert dominant_color_bgr(grey) is None
    assert dominant_color(b"\xff\xd8\xff\xe0 not really a jpeg") is None
    assert dominant_color(b"") is None


def test_majority_wins() -> None:
    image = np.empty((40, 100, 3), np.uint8)
    image[:, :70] = SWATCH_BGR["yellow"]
    image[:, 70:] = SWATCH_BGR["black"]
    assert dominant_color_bgr(image) == "yellow"
