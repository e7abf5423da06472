"""Write examples/corpus/quarterly_results.xlsx: merged two-level headers and row groups.

Run from the repository root: `python examples/make_xlsx.py`. The output is committed; the
script documents how it was made (all figures are invented).
"""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font

OUT = Path(__file__).parent / "corpus" / "quarterly_results.xlsx"

QUARTERS = ["Q1", "Q2", "Q3", "Q4"]
RESULTS = [  # division, segment, revenue Q1-Q4 (EUR m), operating profit Q1-Q4 (EUR m)
    ("Consumer", "Phones", [412.5, 398.0, 455.2, 530.9], [41.2, 37.5, 48.9, 61.3]),
    ("Consumer", "Wearables", [88.1, 92.4, 101.7, 134.6], [7.9, 8.8, 10.2, 15.1]),
    ("Consumer", "Smart home", [54.3, 57.9, 60.2, 79.8], [2.1, 3.0, 3.4, 6.2]),
    ("Enterprise", "Cloud", [230.7, 244.1, 259.8, 281.5], [52.4, 57.0, 61.8, 69.9]),
    ("Enterprise", "Services", [147.2, 151.0, 149.6, 162.3], [18.3, 19.1, 18.7, 21.4]),
    ("Other", "Licensing", [21.9, 20.4, 23.8, 25.1], [15.0, 14.2, 16.9, 18.0]),
]
HEADCOUNT = [
    ("Consumer", 4120, 4180, 4305, 4390),
    ("Enterprise", 2875, 2940, 3010, 3065),
    ("Other", 310, 305, 298, 301),
]


def main() -> None:
    wb = Workbook()
    ws = wb.active
    ws.title = "Results 2023"
    ws["A1"] = "Nordlicht Devices plc — quarterly results 2023 (EUR million)"
    ws.merge_cells("A1:J1")
    ws["A1"].font = Font(bold=True)
    ws["A2"], ws["B2"] = "Division", "Segment"
    ws["C2"], ws["G2"] = "Revenue", "Operating profit"
    ws.merge_cells("A2:A3")
    ws.merge_cells("B2:B3")
    ws.merge_cells("C2:F2")
    ws.merge_cells("G2:J2")
    for i, q in enumerate(QUARTERS):
        ws.cell(row=3, column=3 + i, value=q)
        ws.cell(row=3, column=7 + i, value=q)
    row = 4
    for division, segment, revenue, profit in RESULTS:
        ws.cell(row=row, column=1, value=division)
        ws.cell(row=row, column=2, value=segment)
        for i in range(4):
            ws.cell(row=row, column=3 + i, value=revenue[i])
            ws.cell(row=row, column=7 + i, value=profit[i])
        row += 1
    ws.merge_cells("A4:A6")  # Consumer
    ws.merge_cells("A7:A8")  # Enterprise
    for cells in ws["A2:J3"]:
        for cell in cells:
            cell.alignment = Alignment(horizontal="center")
            cell.font = Font(bold=True)

    hc = wb.create_sheet("Headcount")
    hc.append(["Division", *(f"End of {q}" for q in QUARTERS)])
    for entry in HEADCOUNT:
        hc.append(list(entry))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    wb.save(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
