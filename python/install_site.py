"""Where `cmake --install --prefix PREFIX` puts the package: the directory under PREFIX that
PREFIX's Python searches (python/CMakeLists.txt runs this at install time).

    install_site.py PREFIX X.Y [DIR]

X.Y is the Python the native module was built for. When PREFIX has its own python3 of that version
(a venv, or /usr), that one is asked; otherwise this one. DIR, when given, is the answer (relative to
PREFIX). Prints "SITE;INTERPRETER;SEARCHED": the directory, the interpreter the installed commands
run, and 1 when it searches the directory without PYTHONPATH (else 0).
"""

import os
import site
import subprocess
import sys
import sysconfig


def searched_by_this_python():
    """The directories this interpreter searches, or would once they exist."""
    dirs = [p for p in sys.path if p] + list(site.getsitepackages())
    return {os.path.realpath(d) for d in dirs}


def site_dir(prefix):
    """The first of the directories a package may go in under PREFIX/lib that this interpreter
    searches (Debian's python3: /usr/local/lib/python3.11/dist-packages for /usr/local,
    /usr/lib/python3/dist-packages for /usr; a venv's site-packages), else the first of them."""
    values = {"base": prefix, "platbase": prefix}
    candidates = [sysconfig.get_path("platlib", vars=values)]  # the interpreter's default scheme
    candidates += site.getsitepackages([prefix])
    candidates.append(sysconfig.get_path("platlib", "posix_prefix", vars=values))
    lib = os.path.join(prefix, "lib") + os.sep
    # Debian's default scheme and site also name PREFIX/local/lib/...: /usr's /usr/local, not PREFIX's.
    candidates = [c for c in candidates if c.startswith(lib)]
    searched = searched_by_this_python()
    for c in candidates:
        if os.path.realpath(c) in searched:
            return c, True
    return candidates[0], False


def main():
    prefix = os.path.abspath(sys.argv[1])
    version = sys.argv[2]
    given = sys.argv[3] if len(sys.argv) > 3 else ""
    own = os.path.join(prefix, "bin", "python3")
    this = "%d.%d" % sys.version_info[:2]
    # A venv's python3 is a link to the one it was made from, so the paths are compared, not the files.
    if os.access(own, os.X_OK) and own != os.path.abspath(sys.executable) \
            and os.environ.get("SYSTOLIC_INSTALL_SITE_ASKED") is None:
        try:
            theirs = subprocess.run([own, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                    capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            theirs = None
        if theirs == version:
            env = dict(os.environ, SYSTOLIC_INSTALL_SITE_ASKED="1")
            return subprocess.run([own, __file__] + sys.argv[1:], env=env).returncode
    if this != version:
        sys.stderr.write(f"install_site.py: the module was built for Python {version}, this is {this}\n")
    if given:
        directory = given if os.path.isabs(given) else os.path.join(prefix, given)
        searched = os.path.realpath(directory) in searched_by_this_python()
    else:
        directory, searched = site_dir(prefix)
    print(f"{directory};{sys.executable};{int(searched)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
