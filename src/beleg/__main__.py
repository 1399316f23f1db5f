import sys

from beleg.cli.main import main

sys.exit(main())
