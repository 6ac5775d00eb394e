#!/usr/bin/env python3
"""Prints the text tags of an audio file as mutagen reads them, as JSON:
{name: [value, ...]}. Names: ID3v2 frame ids ("TXXX:<description>" for
user text frames), MP4 atom names, Vorbis comment and APEv2 names
upper-cased, ASF attribute names. Pictures and binary values are left out.
The tests of package tagwrite use it as a reader independent of TagLib."""
import json
import sys

import mutagen
from mutagen.apev2 import APEv2, APETextValue
from mutagen.asf import ASFUnicodeAttribute
from mutagen.id3 import ID3, TextFrame, TXXX
from mutagen.mp4 import MP4Tags, MP4FreeForm


def main(path):
    f = mutagen.File(path)
    if f is None:
        sys.exit("mutagen: unknown format: " + path)
    out = {}

    def add(name, values):
        out.setdefault(name, []).extend(str(v) for v in values)

    tags = f.tags
    if tags is None:
        pass
    elif isinstance(tags, ID3):
        for frame in tags.values():
            if isinstance(frame, TXXX):
                add("TXXX:" + frame.desc, frame.text)
            elif isinstance(frame, TextFrame):
                add(frame.FrameID, frame.text)
    elif isinstance(tags, MP4Tags):
        for name, values in tags.items():
            if name.startswith("----"):
                add(name, [bytes(v).decode("utf-8") for v in values if isinstance(v, MP4FreeForm)])
            elif all(isinstance(v, str) for v in values):
                add(name, values)
    elif isinstance(tags, APEv2):
        for name, value in tags.items():
            if isinstance(value, APETextValue):
                add(name.upper(), list(value))
    elif f.__class__.__name__ == "ASF":
        for name, values in tags.items():
            add(name, [v.value for v in values if isinstance(v, ASFUnicodeAttribute)])
    else:  # Vorbis comment (FLAC, Ogg)
        for name, value in tags:
            if name.upper() not in ("METADATA_BLOCK_PICTURE", "COVERART"):
                add(name.upper(), [value])
    json.dump(out, sys.stdout, ensure_ascii=False, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
