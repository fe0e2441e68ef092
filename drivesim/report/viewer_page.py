"""The scenario viewer's HTML page (SVG + plain JavaScript; ``%%DATA%%`` is the JSON of
:func:`drivesim.report.viewer.page_data`, ``%%TITLE%%`` the escaped title)."""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%%TITLE%%</title>
<style>
body{font-family:system-ui,sans-serif;margin:16px;color:#222;max-width:1100px}
h1{font-size:18px;margin:0 0 6px}
#info{font-size:13px;color:#444;margin:0 0 8px}
#info span{margin-right:14px}
#map{width:100%;border:1px solid #ccc;background:#f4f6f4}
.lane{fill:none;stroke:#d4d4d4;stroke-linejoin:round}
.centre{fill:none;stroke:#fff;stroke-width:0.15;stroke-dasharray:2 2}
.agent{fill:#6b8fc7;stroke:#234;stroke-width:0.12}
.agent[data-kind=pedestrian]{fill:#59a14f;stroke:#1d4716;stroke-width:0.08}
.agent[data-kind=cyclist]{fill:#b07aa1;stroke:#3f1d38;stroke-width:0.1}
.agent.ego{fill:#f28e2b;stroke:#7a3b00;stroke-width:0.25}
.agent.hit{fill:#c44e52;stroke:#500;stroke-width:0.25}
.agent.ego[data-kind=pedestrian],.agent.hit[data-kind=pedestrian],.agent.ego[data-kind=cyclist],
.agent.hit[data-kind=cyclist]{stroke-width:0.1}
.halo{fill:none;stroke-width:0.25;stroke-opacity:.55}
.halo[data-kind=pedestrian]{stroke:#59a14f} .halo[data-kind=cyclist]{stroke:#b07aa1}
.nose{stroke:#111;stroke-width:0.2}
#trail{fill:none;stroke:#f28e2b;stroke-width:0.3;stroke-opacity:.6}
#crash{fill:none;stroke:#c00;stroke-width:0.5}
.controls{margin:8px 0;display:flex;gap:10px;align-items:center;font-size:14px}
#slider{flex:1}
.trace{width:100%;height:90px;display:block}
.trace text{font-size:11px;fill:#444}
.trace .line{fill:none;stroke:#f28e2b;stroke-width:1.5}
.trace .cursor{stroke:#222;stroke-width:1}
.trace .crash{stroke:#c00;stroke-width:1;stroke-dasharray:4 3}
.legend{font-size:12px;color:#555}
#kinds span{margin-right:14px;white-space:nowrap}
#kinds svg{width:30px;height:14px;vertical-align:middle;margin-right:4px}
#js-errors{color:#c00;white-space:pre-wrap}
</style></head>
<body data-ready="pending" data-step="0">
<h1 id="title"></h1><p id="info"></p>
<svg id="map" xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMidYMid meet"></svg>
<div class="controls"><button id="play" type="button">play</button>
<input id="slider" type="range" min="0" value="0" step="1"><span id="label"></span></div>
<p class="legend" id="kinds"></p>
<p class="legend">orange: ego (in the shape of its road-user type) · red: the agent the ego
hit · red circle: the collision (from its step on) · dashed red line in the traces: collision
step · a faint ring marks each pedestrian and cyclist · hover an agent for its type. Keys:
space play/pause, ←/→ step.</p>
<div id="traces"></div>
<pre id="js-errors"></pre>
<script type="application/json" id="data">%%DATA%%</script>
<script>
(function(){
var errs=document.getElementById('js-errors');
window.addEventListener('error',function(e){errs.textContent+=String(e.message)+'\n';});
var D=JSON.parse(document.getElementById('data').textContent);
var NS='http://www.w3.org/2000/svg', F=D.frames.x.length, N=D.length.length;
var b=D.bounds, W=b[2]-b[0], H=b[3]-b[1], VW=Math.max(W,2*H), VH=VW/2, follow=VW>160;
if(follow){VW=160;VH=80;}
function el(tag,attrs,parent){var e=document.createElementNS(NS,tag);
  for(var k in attrs){e.setAttribute(k,attrs[k]);} if(parent){parent.appendChild(e);} return e;}
function sx(x){return (x-b[0]).toFixed(2);} function sy(y){return (b[3]-y).toFixed(2);}
document.getElementById('title').textContent=D.title||'scenario';
var info=document.getElementById('info');
Object.keys(D.info).forEach(function(k){var s=document.createElement('span');
  s.textContent=k+': '+(D.info[k]===null?'n/a':D.info[k]);info.appendChild(s);});
var map=document.getElementById('map');
function clamp(v,lo,hi){return Math.min(Math.max(v,lo),hi);}
function view(cx,cy){var l=clamp(cx-VW/2,0,Math.max(W-VW,0)),t=clamp(cy-VH/2,0,Math.max(H-VH,0));
  if(W<VW){l=(W-VW)/2;} if(H<VH){t=(H-VH)/2;}
  map.setAttribute('viewBox',l.toFixed(2)+' '+t.toFixed(2)+' '+VW.toFixed(2)+' '+VH.toFixed(2));}
view(W/2,H/2);
D.lanes.forEach(function(l){var p=l.c.map(function(q){return sx(q[0])+','+sy(q[1]);}).join(' ');
  el('polyline',{'class':'lane',points:p,'stroke-width':l.w},map);});
D.lanes.forEach(function(l){var p=l.c.map(function(q){return sx(q[0])+','+sy(q[1]);}).join(' ');
  el('polyline',{'class':'centre',points:p},map);});
var trail=el('polyline',{id:'trail'},map), boxes=[], noses=[], halos=[];
var KN=D.kind_names, COLOURS={vehicle:'blue',pedestrian:'green',cyclist:'purple'};
function outline(kind,l,w){if(kind==='cyclist'){var t=Math.min(w,l);
    return [[l,0],[l-t,w],[t-l,w],[-l,0],[t-l,-w],[l-t,-w]];}
  return [[l,w],[l,-w],[-l,-w],[-l,w]];}
function size(i){return Math.max(D.length[i],D.width[i]);}
for(var i=0;i<N;i++){var ring=null;
  if(D.kind[i]>0){ring={'class':'halo','data-kind':KN[D.kind[i]],r:Math.max(2,size(i)/2+0.8)};}
  halos.push(ring?el('circle',ring,map):null);}
for(var i=0;i<N;i++){var kind=KN[D.kind[i]], cls='agent'+(i===D.ego?' ego':'')+(i===D.hit?' hit':'');
  var shape=el(kind==='pedestrian'?'circle':'polygon',{id:'agent-'+i,'class':cls,'data-kind':kind},map);
  if(kind==='pedestrian'){shape.setAttribute('r',(size(i)/2).toFixed(2));}
  el('title',{},shape).textContent='agent '+i+' · '+kind+(i===D.ego?' · ego':'')
    +(i===D.hit?' · hit by the ego':'');
  boxes.push(shape); noses.push(el('line',{'class':'nose'},map));}
map.appendChild(boxes[D.ego]); map.appendChild(noses[D.ego]);
var legend=document.getElementById('kinds');
legend.appendChild(document.createTextNode('road users: '));
D.kinds_present.forEach(function(kind){var s=document.createElement('span');
  var icon=el('svg',{viewBox:'-2.6 -1.3 5.2 2.6'},s);
  var sz={vehicle:[2.2,0.9],pedestrian:[0.9,0.9],cyclist:[2.2,0.5]}[kind];
  if(kind==='pedestrian'){el('circle',{'class':'agent','data-kind':kind,r:sz[0]},icon);}
  else{var pts=outline(kind,sz[0],sz[1]).map(function(q){return q[0]+','+q[1];}).join(' ');
    el('polygon',{'class':'agent','data-kind':kind,points:pts},icon);}
  s.appendChild(document.createTextNode(kind+' ('+COLOURS[kind]+')'));legend.appendChild(s);});
var crash=el('circle',{id:'crash',r:Math.max(2,D.length[D.ego]),display:'none'},map);
function corners(k,i){var x=D.frames.x[k][i],y=D.frames.y[k][i],h=D.frames.h[k][i];
  var c=Math.cos(h),s=Math.sin(h),out=[];
  outline(KN[D.kind[i]],D.length[i]/2,D.width[i]/2).forEach(function(u){
    out.push([x+u[0]*c-u[1]*s,y+u[0]*s+u[1]*c]);});return out;}
var traces=[], cf=D.collision_frame;
Object.keys(D.traces).forEach(function(name){
  var v=D.traces[name], fin=v.filter(function(q){return q!==null&&q<1e8;});
  var lo=Math.min.apply(null,fin.concat([0])), hi=Math.max.apply(null,fin.concat([1]));
  if(name.indexOf('TTC')===0){hi=Math.min(hi,10);}
  var svg=el('svg',{'class':'trace',viewBox:'0 0 1000 90',preserveAspectRatio:'none'});
  document.getElementById('traces').appendChild(svg);
  function px(k){return 50+k*940/Math.max(F-1,1);}
  function py(q){return 80-70*(Math.min(q,hi)-lo)/((hi-lo)||1);}
  var pts=[];v.forEach(function(q,k){if(q!==null&&q<1e8){pts.push(px(k).toFixed(1)+','+py(q).toFixed(1));}});
  el('polyline',{'class':'line',points:pts.join(' ')},svg);
  var t=el('text',{x:2,y:12},svg);t.textContent=name;
  var t2=el('text',{x:2,y:84},svg);t2.textContent=lo.toFixed(1)+'..'+hi.toFixed(1);
  if(cf>=0){el('line',{'class':'crash',x1:px(cf),x2:px(cf),y1:5,y2:85},svg);}
  traces.push({cursor:el('line',{'class':'cursor',y1:5,y2:85},svg),px:px,v:v,name:name});});
var slider=document.getElementById('slider'), label=document.getElementById('label');
slider.max=F-1;
function draw(k){
  for(var i=0;i<N;i++){var on=D.frames.v[k][i]===1&&D.frames.x[k][i]!==null;
    boxes[i].setAttribute('display',on?'inline':'none');noses[i].setAttribute('display',on?'inline':'none');
    if(halos[i]){halos[i].setAttribute('display',on?'inline':'none');}
    if(!on){continue;}
    var X=D.frames.x[k][i],Y=D.frames.y[k][i],h=D.frames.h[k][i];
    if(halos[i]){halos[i].setAttribute('cx',sx(X));halos[i].setAttribute('cy',sy(Y));}
    var fx=X+D.length[i]/2*Math.cos(h),fy=Y+D.length[i]/2*Math.sin(h);
    if(boxes[i].tagName==='circle'){boxes[i].setAttribute('cx',sx(X));boxes[i].setAttribute('cy',sy(Y));}
    else{var p=corners(k,i).map(function(q){return sx(q[0])+','+sy(q[1]);});
      boxes[i].setAttribute('points',p.join(' '));}
    noses[i].setAttribute('x1',sx(D.frames.x[k][i]));noses[i].setAttribute('y1',sy(D.frames.y[k][i]));
    noses[i].setAttribute('x2',sx(fx));noses[i].setAttribute('y2',sy(fy));}
  var e=D.ego, tp=[];
  for(var j=0;j<=k;j++){if(D.frames.x[j][e]!==null){tp.push(sx(D.frames.x[j][e])+','+sy(D.frames.y[j][e]));}}
  trail.setAttribute('points',tp.join(' '));
  if(cf>=0&&k>=cf){crash.setAttribute('cx',sx(D.frames.x[cf][e]));crash.setAttribute('cy',sy(D.frames.y[cf][e]));
    crash.setAttribute('display','inline');}else{crash.setAttribute('display','none');}
  if(follow&&D.frames.x[k][e]!==null){view(D.frames.x[k][e]-b[0],b[3]-D.frames.y[k][e]);}
  var parts=[];traces.forEach(function(t){var x=t.px(k);
    t.cursor.setAttribute('x1',x);t.cursor.setAttribute('x2',x);
    var q=t.v[k];parts.push(t.name.split(' ')[0]+' '+(q===null||q>1e8?'∞':q.toFixed(2)));});
  label.textContent='t = '+(k*D.dt).toFixed(1)+' s (frame '+k+'/'+(F-1)+')'+(cf>=0&&k>=cf?' · COLLISION':'')
    +' · '+parts.join(' · ');
  document.body.setAttribute('data-step',String(k));}
slider.addEventListener('input',function(){draw(parseInt(slider.value,10));});
var timer=null, play=document.getElementById('play');
function toggle(){if(timer){clearInterval(timer);timer=null;play.textContent='play';return;}
  if(parseInt(slider.value,10)>=F-1){slider.value=0;}
  play.textContent='pause';timer=setInterval(function(){var k=parseInt(slider.value,10)+1;
    if(k>=F){toggle();return;} slider.value=k;slider.dispatchEvent(new Event('input'));},D.dt*1000);}
play.addEventListener('click',toggle);
document.addEventListener('keydown',function(ev){if(ev.key===' '){ev.preventDefault();toggle();}
  else if(ev.key==='ArrowRight'||ev.key==='ArrowLeft'){
    var k=parseInt(slider.value,10)+(ev.key==='ArrowRight'?1:-1);
    slider.value=Math.min(Math.max(k,0),F-1);slider.dispatchEvent(new Event('input'));}});
var m=/step=(\d+)/.exec(location.hash), start=m?Math.min(parseInt(m[1],10),F-1):0;
slider.value=start; slider.dispatchEvent(new Event('input'));
document.body.setAttribute('data-frames',String(F));
document.body.setAttribute('data-ready','ok');
})();
</script></body></html>
"""
