import sys

from sproutrag.cli import main

sys.exit(main())
