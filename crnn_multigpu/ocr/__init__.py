"""The OCR product, the wrapper's first user: the CRNN model (``crnn``), its characters
(``charset``), reading and decoding (``inference``, ``lexicon``, ``metrics``), printed pages
(``page``, ``page_layout``) and pictures of the results (``picture``)."""
