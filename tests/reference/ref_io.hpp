// meshbatch reference programs: what igl_mcf.cpp and cgal_smooth_shape.cpp
// share, written here so that neither depends on the other library's I/O
// and both see the same vertices in the same order: a minimal OBJ reader
// (v and f lines only; "f a/b/c" keeps the vertex index; polygons are
// refused), a .npy writer (float64, C order, format version 1.0), the
// command-line parsing and a monotonic clock. Not part of the library.
#ifndef MB_REF_IO_HPP
#define MB_REF_IO_HPP

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mbref {

struct Mesh {
  std::vector<double> xyz;   // [nv * 3]
  std::vector<int> tri;      // [nf * 3], 0-based
  std::size_t nv() const { return xyz.size() / 3; }
  std::size_t nf() const { return tri.size() / 3; }
};

// Read the vertices and triangles of an OBJ file (positions with strtod:
// the file's decimal digits are read exactly as meshbatch's reader does).
inline Mesh read_obj(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  Mesh m;
  std::string line;
  long lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    if (line.size() < 2) continue;
    if (line[0] == 'v' && (line[1] == ' ' || line[1] == '\t')) {
      const char *p = line.c_str() + 1;
      char *end = nullptr;
      for (int d = 0; d < 3; d++) {
        double x = std::strtod(p, &end);
        if (end == p) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": bad vertex");
        m.xyz.push_back(x);
        p = end;
      }
    } else if (line[0] == 'f' && (line[1] == ' ' || line[1] == '\t')) {
      std::istringstream ss(line.substr(2));
      std::string tok;
      std::vector<long> f;
      while (ss >> tok) {
        long k = std::strtol(tok.c_str(), nullptr, 10);
        if (k == 0) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": bad face");
        f.push_back(k < 0 ? (long)m.nv() + k : k - 1);
      }
      if (f.size() != 3)
        throw std::runtime_error(path + ":" + std::to_string(lineno) + ": not a triangle");
      for (long k : f) m.tri.push_back((int)k);
    }
  }
  if (m.nv() == 0 || m.nf() == 0) throw std::runtime_error(path + ": no triangles");
  for (int k : m.tri)
    if (k < 0 || (std::size_t)k >= m.nv()) throw std::runtime_error(path + ": face index out of range");
  return m;
}

// Write a float64 array of the given shape (C order) as .npy 1.0.
inline void write_npy(const std::string &path, const std::vector<std::size_t> &shape,
                      const double *data) {
  std::string dims;
  std::size_t count = 1;
  for (std::size_t s : shape) {
    dims += std::to_string(s) + ", ";
    count *= s;
  }
  dims.resize(dims.size() - 1);  // "(a, b, c,)"; "(a,)" for one dimension
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + dims + "), }";
  std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot write");
  const char magic[] = "\x93NUMPY\x01\x00";
  out.write(magic, 8);
  uint16_t hl = (uint16_t)header.size();
  unsigned char le[2] = {(unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
  out.write(reinterpret_cast<const char *>(le), 2);
  out.write(header.data(), (std::streamsize)header.size());
  out.write(reinterpret_cast<const char *>(data), (std::streamsize)(count * sizeof(double)));
  if (!out) throw std::runtime_error(path + ": write failed");
}

// The median of a list of timings (the lower middle one for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[(v.size() - 1) / 2];
}

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// "--key value" options after the positional arguments.
struct Args {
  std::vector<std::string> pos;
  std::vector<std::pair<std::string, std::string>> opt;
  Args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
      std::string a = argv[i];
      if (a.rfind("--", 0) == 0) {
        if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
        opt.emplace_back(a, argv[++i]);
      } else {
        pos.push_back(a);
      }
    }
  }
  const char *get(const std::string &k, const char *def) const {
    for (auto &p : opt)
      if (p.first == k) return p.second.c_str();
    return def;
  }
};

}  // namespace mbref
#endif
