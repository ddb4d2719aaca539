"""The shipped models as package data (crnn_multigpu.models once installed): ``crnn_multigpu.ocr.shipped`` finds them."""
