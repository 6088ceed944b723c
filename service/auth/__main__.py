"""`python -m service.auth new | hash`: tokens for ENGRAM_TOKENS_FILE."""

import sys

from service.auth.tokens import main

sys.exit(main())
