from argent.cli import main

raise SystemExit(main())
