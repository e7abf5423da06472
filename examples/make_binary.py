"""Write the binary example tables: river_lengths.parquet and harbour_festival.sqlite.

Run from the repository root: `python examples/make_binary.py`. The outputs are committed;
the script documents how they were made (all content is invented).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

CORPUS = Path(__file__).parent / "corpus"

RIVERS = {
    "river": ["Selby", "Alder", "Fen", "Mill Race", "Varna", "Kestrel Water", "Oxbow"],
    "length_km": [212.4, 168.0, 94.5, 31.2, 143.8, 57.6, 22.9],
    "source": [
        "Beech Ridge",
        "Grey Fells",
        "Fenwick Moss",
        "Millbrook Weir",
        "Lake Varna",
        "Kestrel Tarn",
        "Varna (branch)",
    ],
    "mouth": [
        "Port Selby Bay",
        "River Selby",
        "River Alder",
        "River Fen",
        "Reed delta",
        "River Varna",
        "River Varna",
    ],
    "navigable": [True, True, False, False, True, False, False],
}

STAGES = [
    ("Main", "Harbour quay", 5000),
    ("Lighthouse", "North pier", 1200),
    ("Tent", "Old fish market", 600),
]
PERFORMANCES = [
    ("Friday", "19:00", "Main", "The Tidewater Band"),
    ("Friday", "21:30", "Main", "Saltmarsh Choir"),
    ("Friday", "20:00", "Lighthouse", "Mira Okonkwo Trio"),
    ("Saturday", "14:00", "Tent", "Children's sea shanty hour"),
    ("Saturday", "18:00", "Lighthouse", "Northern Lights Quartet"),
    ("Saturday", "21:00", "Main", "Harbour Lights Orchestra"),
    ("Sunday", "12:00", "Tent", "Fenwick Brass"),
    ("Sunday", "17:00", "Main", "Anchor & Rope"),
]


def main() -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(RIVERS), CORPUS / "river_lengths.parquet")
    db = CORPUS / "harbour_festival.sqlite"
    db.unlink(missing_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE stages (stage TEXT PRIMARY KEY, location TEXT, capacity INTEGER)"
        )
        conn.execute("CREATE TABLE performances (day TEXT, start TEXT, stage TEXT, act TEXT)")
        conn.executemany("INSERT INTO stages VALUES (?, ?, ?)", STAGES)
        conn.executemany("INSERT INTO performances VALUES (?, ?, ?, ?)", PERFORMANCES)
    conn.close()
    print(f"wrote {CORPUS / 'river_lengths.parquet'} and {db}")


if __name__ == "__main__":
    main()
