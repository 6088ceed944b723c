"""Thread context: memories of one thread indexed with the text of the memory before them."""

from service.threads.linker import ThreadLinker
from service.threads.plan import FIELDS, inferred, thread_position

__all__ = ["FIELDS", "ThreadLinker", "inferred", "thread_position"]
