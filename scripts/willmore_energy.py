#!/usr/bin/env python3
"""An independent numpy/scipy re-implementation of willmore_flow's step
(src/ops/willmore/mb_willmore.h: CPS11/CPS13 spin transformations), for
asking where the flow's Willmore energy stops and why:

    willmore_energy.py MESH.obj [--schedule 0.05x40,0.2x10,1x108] [--out F.csv]
                                [--variant VAR] [--sphere [--every K]]
                                [--init START.npy|meshbatch-output.h5]

Each step prints (and --out writes as CSV) the reported energy
W = sum_i |(L x)_i|^2 / (4 M_i), its normal part sum_i H_i^2 M_i, the
step's quasi-conformal distortion, the share of the requested curvature
change the step realised (<H~ |lambda|^2 - H, rho>_M / <rho, rho>_M, CPS11's
H~ |lambda|^2 = H + rho: 1 where the discrete spin transformation does what
the flow asks), and with --sphere the energy of the
same vertices moved radially onto their best-fit sphere. The target is the
same energy of a round icosphere of 2,562 vertices (printed first).

Variants of step 1's curvature (the rest is the house's step):
  house      H_i = -(L x)_i . N_i / (2 M_i), M barycentric (the code's)
  tau_h      the house's rho, scaled by the reported-energy line search:
             the step is retried with tau / 2 while W rises (at most 8
             halvings; then the step of tau / 256 is taken anyway)
  circ       H_i = -(L x)_i . N_i / (2 C_i) with C_i = 1/4 sum_j L_ij |x_j - x_i|^2
             the circumcentric (Voronoi) dual area, which makes H exactly
             1 / r on any triangulation of a round sphere (with radial N)
  gen        the house's rho; step 3 solves the generalized eigenproblem
             (D - rho) lambda = gamma (M (x) I_4) lambda (lambda normalised in
             the mass inner product) instead of the standard one
  smoothK    the house's rho after one implicit heat step (M - s L) rho' =
             M rho, s = K times the mean vertex area (K = 1 where absent),
             before the projection: a low-pass filter of the curvature change
Not a test: it asserts nothing and prints figures.
"""
import argparse
import math
import sys

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def load_obj(path):
    v, f = [], []
    with open(path) as fh:
        for line in fh:
            w = line.split()
            if not w:
                continue
            if w[0] == "v":
                v.append([float(t) for t in w[1:4]])
            elif w[0] == "f":
                idx = [int(t.split("/")[0]) - 1 for t in w[1:]]
                for k in range(1, len(idx) - 1):
                    f.append([idx[0], idx[k], idx[k + 1]])
    return np.array(v, float), np.array(f, np.int64)


def icosphere(level):
    t = (1 + 5 ** 0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t),
         (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    v = [np.array(p, float) / np.linalg.norm(p) for p in v]
    for _ in range(level):
        mid, nf = {}, []

        def m(a, b):
            k = (min(a, b), max(a, b))
            if k not in mid:
                p = v[a] + v[b]
                v.append(p / np.linalg.norm(p))
                mid[k] = len(v) - 1
            return mid[k]
        for a, b, c in f:
            ab, bc, ca = m(a, b), m(b, c), m(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return np.array(v), np.array(f, np.int64)


def cot_laplacian(x, f):
    """L (negative semi-definite, L_ij = (cot a + cot b) / 2), barycentric mass."""
    n = len(x)
    I, J, W = [], [], []
    e1 = x[f[:, 1]] - x[f[:, 0]]
    e2 = x[f[:, 2]] - x[f[:, 0]]
    a2 = np.linalg.norm(np.cross(e1, e2), axis=1)
    for a in range(3):
        i, j, o = f[:, (a + 1) % 3], f[:, (a + 2) % 3], f[:, a]
        u, w = x[i] - x[o], x[j] - x[o]
        cot = (u * w).sum(1) / np.linalg.norm(np.cross(u, w), axis=1)
        I += [i, j]
        J += [j, i]
        W += [0.5 * cot, 0.5 * cot]
    I, J, W = np.concatenate(I), np.concatenate(J), np.concatenate(W)
    L = sp.coo_matrix((W, (I, J)), shape=(n, n)).tocsr()
    L = L - sp.diags(np.asarray(L.sum(1)).ravel())
    mass = np.zeros(n)
    for a in range(3):
        np.add.at(mass, f[:, a], a2 / 6)
    return L.tocsr(), mass, a2 / 2


def normals(x, f):
    c = np.cross(x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]])
    N = np.zeros_like(x)
    for a in range(3):
        np.add.at(N, f[:, a], c)
    return N / np.linalg.norm(N, axis=1)[:, None]


def energy(x, f):
    L, M, _ = cot_laplacian(x, f)
    y = L @ x
    N = normals(x, f)
    H = -(y * N).sum(1) / (2 * M)
    return float(((y * y).sum(1) / (4 * M)).sum()), float((H * H * M).sum())


def project(rho, M, N):
    U = [np.ones(len(M)), N[:, 0].copy(), N[:, 1].copy(), N[:, 2].copy()]
    for k in range(4):
        for _ in range(2):
            for l in range(k):
                U[k] = U[k] - (M * U[k] * U[l]).sum() * U[l]
        U[k] = U[k] / math.sqrt((M * U[k] * U[k]).sum())
    for _ in range(2):
        for k in range(4):
            rho = rho - (M * rho * U[k]).sum() * U[k]
    return rho


def qmul(a, b):
    w = a[..., 0] * b[..., 0] - a[..., 1] * b[..., 1] - a[..., 2] * b[..., 2] - a[..., 3] * b[..., 3]
    x = a[..., 0] * b[..., 1] + a[..., 1] * b[..., 0] + a[..., 2] * b[..., 3] - a[..., 3] * b[..., 2]
    y = a[..., 0] * b[..., 2] - a[..., 1] * b[..., 3] + a[..., 2] * b[..., 0] + a[..., 3] * b[..., 1]
    z = a[..., 0] * b[..., 3] + a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1] + a[..., 3] * b[..., 0]
    return np.stack([w, x, y, z], -1)


def conj(a):
    return a * np.array([1, -1, -1, -1.0])


LEFT = [[(0, 1), (1, -1), (2, -1), (3, -1)], [(1, 1), (0, 1), (3, -1), (2, 1)],
        [(2, 1), (3, 1), (0, 1), (1, -1)], [(3, 1), (2, -1), (1, 1), (0, 1)]]


def dirac(x, f, rho):
    n = len(x)
    A = 0.5 * np.linalg.norm(np.cross(x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]]), axis=1)
    e = np.zeros((len(f), 3, 4))
    for a in range(3):
        e[:, a, 1:] = x[f[:, (a + 2) % 3]] - x[f[:, (a + 1) % 3]]
    r = rho[f]
    I, J, V = [], [], []
    for a in range(3):
        for b in range(3):
            q = -qmul(e[:, a], e[:, b]) / (4 * A)[:, None]
            q[:, 1:] += (r[:, a, None] * e[:, b, 1:] - r[:, b, None] * e[:, a, 1:]) / 6
            q[:, 0] += r[:, a] * r[:, b] * A / 9
            for row in range(4):
                for col in range(4):
                    comp, sgn = LEFT[row][col]
                    I.append(4 * f[:, a] + row)
                    J.append(4 * f[:, b] + col)
                    V.append(sgn * q[:, comp])
    return sp.coo_matrix((np.concatenate(V), (np.concatenate(I), np.concatenate(J))),
                         shape=(4 * n, 4 * n)).tocsc()


def eigen(D, tol=1e-10, maxit=100, mass=None):
    """Inverse iteration for the smallest eigenpair of D lambda = gamma B lambda,
    B = I (the house's) or the mass M (x) I_4 (mass given: the generalized problem)."""
    m = D.shape[0]
    dmax = D.diagonal().max()
    b = np.ones(m) if mass is None else np.repeat(mass, 4)
    bmax = b.max()
    lu = sla.splu((D + 1e-12 * dmax / bmax * sp.diags(b)).tocsc())
    lam = np.zeros(m)
    lam[0::4] = 1
    lam /= math.sqrt(lam @ (b * lam))
    for it in range(1, maxit + 1):
        y = lu.solve(b * lam)
        lam = y / math.sqrt(y @ (b * y))
        y = D @ lam
        g = lam @ y
        res = np.linalg.norm(y - g * b * lam) / dmax
        if res <= tol:
            break
    lam = lam.reshape(-1, 4)
    mq = lam.sum(0)
    q = conj(mq / np.linalg.norm(mq))
    return qmul(lam, q), g, it, res


def spin(x, f, L, lam):
    C = L.tocoo()
    off = C.row != C.col
    i, j, w = C.row[off], C.col[off], C.data[off]
    e = np.zeros((len(i), 4))
    e[:, 1:] = x[j] - x[i]
    li, lj = lam[i], lam[j]
    et = (qmul(qmul(conj(li), e), li) / 3 + qmul(qmul(conj(li), e), lj) / 6
          + qmul(qmul(conj(lj), e), li) / 6 + qmul(qmul(conj(lj), e), lj) / 3)
    b = np.zeros((len(x), 3))
    np.add.at(b, i, w[:, None] * et[:, 1:])
    P = (-L).tolil()
    P[0, :] = 0
    P[:, 0] = 0
    P[0, 0] = 1
    b = -b
    b[0] = 0
    xn = sla.splu(P.tocsc()).solve(b)
    res = np.linalg.norm(b - P @ xn, axis=0) / np.linalg.norm(b, axis=0)
    return xn, float(res.max())


def qc_max(f, x0, x1):
    def frame(x):
        e1 = x[f[:, 1]] - x[f[:, 0]]
        e2 = x[f[:, 2]] - x[f[:, 0]]
        l1 = np.linalg.norm(e1, axis=1)
        u = e1 / l1[:, None]
        nrm = np.cross(e1, e2)
        v = np.cross(nrm / np.linalg.norm(nrm, axis=1)[:, None], u)
        return np.stack([np.stack([l1, 0 * l1], 1), np.stack([(e2 * u).sum(1), (e2 * v).sum(1)], 1)], 2)
    P0, P1 = frame(x0), frame(x1)
    Amap = P1 @ np.linalg.inv(P0)
    s = np.linalg.svd(Amap, compute_uv=False)
    return float((s[:, 0] / s[:, 1]).max())


def circ_area(x, L):
    """The circumcentric dual area 1/4 sum_j L_ij |x_j - x_i|^2 of each vertex."""
    C = L.tocoo()
    off = C.row != C.col
    d2 = ((x[C.col[off]] - x[C.row[off]]) ** 2).sum(1)
    return np.bincount(C.row[off], C.data[off] * d2, minlength=len(x)) / 4


def step(x, f, tau, a0, c0, variant="house"):
    L, M, _ = cot_laplacian(x, f)
    N = normals(x, f)
    Mh = circ_area(x, L) if variant == "circ" else M
    H = -((L @ x) * N).sum(1) / (2 * Mh)
    rho = -tau * H
    if variant.startswith("smooth"):
        # one implicit heat step on rho: (M - s L) rho_s = M rho, s = kappa *
        # the mean vertex area (kappa after "smooth", default 1)
        kappa = float(variant[6:] or 1)
        s = kappa * M.sum() / len(M)
        rho = sla.spsolve((sp.diags(M) - s * L).tocsc(), M * rho)
    rho = project(rho, M, N)
    lam, g, it, res = eigen(dirac(x, f, rho), mass=M if variant == "gen" else None)
    xn, pres = spin(x, f, L, lam)
    # the curvature change realised: CPS11's H~ |lambda|^2 = H + rho, so
    # (H~ |lambda|^2 - H) against rho (before the rescale, which changes H~
    # by a constant factor)
    Ln, Mn, _ = cot_laplacian(xn, f)
    Hn = -((Ln @ xn) * normals(xn, f)).sum(1) / (2 * Mn)
    got = Hn * (lam * lam).sum(1) - H
    realised = float((M * got * rho).sum() / (M * rho * rho).sum())
    a = Mn.sum()
    c = (Mn[:, None] * xn).sum(0) / a
    return c0 + (xn - c) * math.sqrt(a0 / a), dict(eig=g, it=it, res=res, pres=pres, realised=realised)


def on_sphere(x):
    A = np.c_[2 * x, np.ones(len(x))]
    sol = np.linalg.lstsq(A, (x * x).sum(1), rcond=None)[0]
    c = sol[:3]
    r = math.sqrt(sol[3] + c @ c)
    d = np.linalg.norm(x - c, axis=1)
    return c + (x - c) * (r / d)[:, None], float((d.max() - d.min()) / d.mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mesh")
    ap.add_argument("--schedule", default="0.05x40,0.5x100")
    ap.add_argument("--variant", default="house",
                    help="house, tau_h, circ, gen, smooth[KAPPA]")
    ap.add_argument("--sphere", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--init", help="start from these positions: an .npy [nv, 3] or a meshbatch "
                    "output .h5 (meshes/NAME/vertices, NAME the mesh file's stem); the area and "
                    "centroid kept are still the mesh file's")
    a = ap.parse_args()
    vi, fi = icosphere(4)
    target = energy(vi, fi)[0]
    print(f"round icosphere 2562 vertices: W {target:.10g} (4 pi {4 * math.pi:.10g})")
    x, f = load_obj(a.mesh)
    _, M, _ = cot_laplacian(x, f)
    a0 = M.sum()
    c0 = (M[:, None] * x).sum(0) / a0
    if a.init:
        if a.init.endswith(".npy"):
            x = np.load(a.init)
        else:
            import os
            import h5py
            with h5py.File(a.init, "r") as h:
                x = h["meshes"][os.path.splitext(os.path.basename(a.mesh))[0]]["vertices"][()]
    W, Wn = energy(x, f)
    print(f"step 0: W {W:.10g}  normal part {Wn:.10g}")
    out = open(a.out, "w") if a.out else None
    if out:
        out.write("step,tau,W,W_normal,gap_pct,qc_max,sphere_W,sphere_gap_pct,round,eig,iters\n")
    s = 0
    for part in a.schedule.split(","):
        tau, k = part.split("x")
        tau, k = float(tau), int(k)
        for _ in range(k):
            s += 1
            t = tau
            while True:
                xn, info = step(x, f, t, a0, c0, a.variant)
                Wn_, Wnn = energy(xn, f)
                if a.variant != "tau_h" or Wn_ < W or t < tau / 256:
                    break
                t /= 2
            qc = qc_max(f, x, xn)
            x, W = xn, Wn_
            line = (f"step {s} tau {t:g}: W {W:.10g} ({100 * (W / target - 1):+.3f} %) normal "
                    f"{Wnn:.8g} qc {qc:.4f} eig {info['eig']:.3g} it {info['it']} realised "
                    f"{info['realised']:.3f}")
            sw, sg, rnd = float("nan"), float("nan"), float("nan")
            if a.sphere and s % a.every == 0:
                xs, rnd = on_sphere(x)
                sw = energy(xs, f)[0]
                sg = 100 * (sw / target - 1)
                line += f" | on sphere {sw:.8g} ({sg:+.3f} %) round {rnd:.2e}"
            print(line, flush=True)
            if out:
                out.write(f"{s},{t},{W:.12g},{Wnn:.12g},{100 * (W / target - 1):.5f},{qc:.6f},"
                          f"{sw:.12g},{sg:.5f},{rnd:.4e},{info['eig']:.6g},{info['it']}\n")
                out.flush()
    if a.out:  # the final positions beside the CSV, for --init
        np.save(a.out + ".npy", x)


if __name__ == "__main__":
    sys.exit(main())
