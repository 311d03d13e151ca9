"""Qt item models over session data (QtCore/QtGui only, no widgets)."""
