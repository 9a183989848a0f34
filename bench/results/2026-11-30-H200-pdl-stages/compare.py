import csv,math,sys,collections,lzma
d=sys.argv[1]; names=sys.argv[2:]
def load(f):
    r={}
    op=lzma.open if f.endswith('.xz') else open
    for x in csv.DictReader(l for l in op(f,'rt') if not l.startswith('#')):
        if x['ok']=='1': r[(x['graph'],x['op'],x['F'],x['schedule'],x['role'])]=(float(x['median_ms']),float(x['bound_fraction']))
    return r
V=[load(f"{d}/{n}") for n in names]
ks=[k for k in V[0] if all(k in v for v in V)]
g=lambda xs: math.exp(sum(map(math.log,xs))/len(xs)) if xs else float('nan')
print(len(ks),"cases")
for j in range(1,len(V)):
    print(names[j], "speedup vs", names[0], "%.3f"%g([V[0][k][0]/V[j][k][0] for k in ks]))
by=collections.defaultdict(list)
for k in ks: by[(k[0])].append(k)
for gname,kk in sorted(by.items()):
    print(gname, " ".join("%s %.3f"%(names[j][:8], g([V[0][k][0]/V[j][k][0] for k in kk])) for j in range(1,len(V))))
by=collections.defaultdict(list)
for k in ks: by[k[3]].append(k)
for s,kk in sorted(by.items()):
    print("%-24s"%s, len(kk), " ".join("%.3f"%g([V[0][k][0]/V[j][k][0] for k in kk]) for j in range(1,len(V))))
# best per case (graph,op,F): tuned best among named
best=collections.defaultdict(lambda:[1e9]*len(V))
for k in ks:
    c=k[:3]
    for j in range(len(V)): best[c][j]=min(best[c][j],V[j][k][0])
print("tuned best (min over rows):", " ".join("%s %.3f"%(names[j][:8], g([best[c][0]/best[c][j] for c in best])) for j in range(1,len(V))))
for c in sorted(best):
    if int(c[2])>=128: print(c, " ".join("%.4f"%x for x in best[c]))
