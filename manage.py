#!/usr/bin/env python
"""INT21 Kernel Factory command line: `python manage.py help` lists the commands."""
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "int21web.settings")
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
