"""The Costs tab: a run's LLM ledger and its totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from harvest_gui.inspect import formatting
from harvest_gui.models.records import RecordTableModel
from harvest_gui.views.tables import fit_columns_to_titles, record_table

if TYPE_CHECKING:
    from harvest_engine import LedgerRow, LedgerTotals


class CostsView(QWidget):
    """One row per recorded model call; totals below."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("costsView")
        self.model: RecordTableModel[LedgerRow] = RecordTableModel(
            [
                ("Activity", lambda r: r.activity),
                ("Attempt", lambda r: str(r.attempt)),
                ("Model", lambda r: r.model),
                ("Input tokens", lambda r: f"{r.input_tokens:,}"),
                ("Output tokens", lambda r: f"{r.output_tokens:,}"),
                ("Latency", lambda r: formatting.duration(r.latency)),
                ("Recorded", lambda r: formatting.when(r.recorded_at)),
            ]
        )
        self.table = record_table("costsTable", "LLM ledger")
        self.table.setModel(self.model)
        fit_columns_to_titles(self.table)
        self.totals = QLabel()
        self.totals.setObjectName("costsTotals")
        self.totals.setTextFormat(Qt.TextFormat.PlainText)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)
        layout.addWidget(self.totals)

    def show_costs(self, rows: list[LedgerRow], totals: LedgerTotals) -> None:
        """Fill the table and the totals line."""
        self.model.set_records(rows)
        if totals.calls:
            self.totals.setText(
                f"Total: {formatting.count(totals.calls, 'call')}, "
                f"{formatting.count(totals.input_tokens, 'input token')}, "
                f"{formatting.count(totals.output_tokens, 'output token')}, "
                f"{formatting.duration(totals.latency)} of model latency"
            )
        else:
            self.totals.setText("This run recorded no LLM calls.")
