"""Dense retrieval: the encoder interface, the MiniLM encoders (ONNX, static, sentence-
transformers, HTTP) and the vector index.
"""
